"""dev-v2 queries (unjudged): format, counts, subsets, hygiene (dev families only, new texts
against dev-v1), the no-match audit and the exact targets, from the data where it is present."""

from __future__ import annotations

import csv
import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from mambomeme.corpus.normalise import normalise
from mambomeme.evaluation.benchmark import EXACT_SLICES, SLICES, SUBSETS, Query, read_queries
from mambomeme.evaluation.pooling import load_pool_config, read_exact_targets

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT / "benchmarks" / "dev-v2"
DEV_V1 = ROOT / "benchmarks" / "dev-v1"
SHARED = ROOT.parent / "shared" / "benchmark"
# The memes-10k build the corpus checks read; MAMBOMEME_MEMES10K_BUILD points them elsewhere.
BUILD = Path(os.environ.get("MAMBOMEME_MEMES10K_BUILD", ROOT / "build" / "memes-10k"))
HAS_BUILD = (BUILD / "items.parquet").is_file()

ANSWERABLE_PER_SLICE = 30
# dropped at adjudication: no annotator graded any of its candidates >= 2 (README)
DROPPED = {"entity": 1, "visual": 1}
MIN_NO_MATCH = 30
SAFETY_ANSWERABLE = 30
SAFETY_NO_MATCH = 10
MIN_MULTI_CUE = 10
MIN_FILTER = 10


def _queries() -> list[Query]:
    return read_queries(DEV / "queries.jsonl")  # FORMAT.md validation, no qrels needed


def _key(text: str) -> str:
    return normalise(text).casefold()


def test_benchmark_json_is_the_unjudged_dev_v2() -> None:
    info = json.loads((DEV / "benchmark.json").read_text(encoding="utf-8"))
    assert info == {
        "name": "dev-v2",
        "version": "v2",
        "partition": "dev",
        "corpus": "memes-10k@v1",
        "judgement_set": "unjudged",
        "provisional": True,
        "exposed": False,
    }
    # no judgement set yet: the frozen files appear only when one is adjudicated
    for name in ("qrels.txt", "safety.tsv", "exact.jsonl"):
        assert not (DEV / name).exists(), name


def test_counts_per_slice_and_subset() -> None:
    queries = _queries()
    answerable = Counter(q.slice for q in queries if q.answerable)
    assert answerable == {name: ANSWERABLE_PER_SLICE - DROPPED.get(name, 0) for name in SLICES}
    no_match = [q for q in queries if not q.answerable]
    assert len(no_match) >= MIN_NO_MATCH
    assert len({q.slice for q in no_match}) == len(SLICES)  # spread over every slice
    assert all(re.fullmatch(rf"d2-{q.slice}-nm-\d\d", q.qid) for q in no_match)
    assert all(re.fullmatch(rf"d2-{q.slice}-\d\d", q.qid) for q in queries if q.answerable)
    assert sum("safety" in q.subsets and q.answerable for q in queries) == SAFETY_ANSWERABLE
    assert sum("safety" in q.subsets and not q.answerable for q in queries) == SAFETY_NO_MATCH
    assert sum("multi_cue" in q.subsets for q in queries) >= MIN_MULTI_CUE
    assert sum("filter" in q.subsets for q in queries) >= MIN_FILTER
    for q in queries:
        assert set(q.subsets) <= set(SUBSETS), q.qid
        assert ("multi_cue" in q.subsets) == bool(q.cues), q.qid
        assert ("filter" in q.subsets) == bool(q.filters), q.qid


def test_texts_are_new_against_dev_v1() -> None:
    old = {_key(q.text) for q in read_queries(DEV_V1 / "queries.jsonl")}
    texts = [_key(q.text) for q in _queries()]
    assert not [t for t in texts if t in old]
    assert len(texts) == len(set(texts)), "a query text is repeated within dev-v2"


def test_exact_targets_cover_entity_and_quote_queries() -> None:
    queries = _queries()
    exact = read_exact_targets(DEV / "exact-targets.jsonl")
    need = {q.qid for q in queries if q.answerable and q.slice in EXACT_SLICES}
    assert set(exact) == need
    by_qid = {q.qid: q for q in queries}
    for qid, groups in exact.items():
        if by_qid[qid].slice == "entity":
            assert len(groups) == 1, qid  # one equivalence group: the template's items
        else:
            assert all(len(g) == 1 for g in groups), qid  # every carrier of the quote


def test_pool_config_names_dev_v2_queries() -> None:
    config = load_pool_config(DEV / "pool.yaml")
    assert set(config.systems) == {"bm25", "bm25+typo", "dense", "hybrid"}
    assert config.depth == 10
    assert config.partition == "dev" and config.exact_targets == "exact-targets.jsonl"
    qids = {q.qid for q in _queries()}
    assert set(config.gold) <= qids and set(config.hard_negatives) <= qids
    no_match = {q.qid for q in _queries() if not q.answerable}
    assert no_match <= set(config.hard_negatives)  # every no-match query has its near miss
    # every answerable query has pooled candidates of its own, whatever the systems return
    exact = read_exact_targets(DEV / "exact-targets.jsonl")
    for q in _queries():
        if q.answerable:
            assert q.qid in config.gold or q.qid in exact, q.qid


def test_every_no_match_query_has_an_audit_row() -> None:
    audit = (DEV / "AUDIT.md").read_text(encoding="utf-8")
    assert re.search(r"sha256 `[0-9a-f]{64}`", audit)
    rows = {}
    for line in audit.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("d2-"):
            rows[cells[0]] = cells
    for q in _queries():
        if q.answerable:
            assert q.qid not in rows, q.qid
            continue
        assert q.qid in rows, q.qid
        _, text, checked, _ = rows[q.qid]
        assert text == q.text, q.qid
        counts = re.findall(r"`([^`]+)` (\d+) / (\d+)", checked)
        assert counts and counts[0][0] == q.text, q.qid  # the phrase itself comes first
        assert all(s == "0" and w == "0" for _, s, w in counts), q.qid


@pytest.mark.skipif(not SHARED.is_dir(), reason="needs ../shared/benchmark")
def test_every_query_targets_a_dev_family() -> None:
    with (SHARED / "families.csv").open(newline="") as handle:
        partition = {row["family"]: row["partition"] for row in csv.DictReader(handle)}
    for q in _queries():
        assert partition.get(q.family) == "dev", (q.qid, q.family)


def _frame() -> Any:
    import pandas as pd

    from mambomeme.evaluation.pooling import item_family

    frame = pd.read_parquet(BUILD / "items.parquet")
    frame["family"] = frame["template_group"].map(item_family)
    return frame


@pytest.mark.skipif(not HAS_BUILD, reason="needs build/memes-10k")
def test_exact_targets_follow_from_the_corpus() -> None:
    """Entity: the template items of the query's family (imgflip and memegen, as
    template-equivalences.csv joins them); quote: every item whose OCR text holds the quote,
    over the whole corpus, and every such item is in a dev family."""
    frame = _frame()
    text = frame["ocr_text"].map(lambda s: normalise(s).casefold())
    exact = read_exact_targets(DEV / "exact-targets.jsonl")
    pairs = set()
    if SHARED.is_dir():
        with (SHARED / "template-equivalences.csv").open(newline="") as handle:
            pairs = {
                (
                    f"imgflip-template:{r['imgflip575k_template']}",
                    f"memegen:{r['memegen_template']}",
                )
                for r in csv.DictReader(handle)
            }
    for q in _queries():
        if q.qid not in exact:
            continue
        got = sorted(i for g in exact[q.qid] for i in g)
        if q.slice == "entity":
            mine = frame[(frame.kind == "template") & (frame.family == q.family)]
            assert got == sorted(mine.id), q.qid
            if len(got) == 2 and pairs:
                assert tuple(sorted(got)) in pairs, q.qid
        else:
            carriers = frame[text.str.contains(re.escape(_key(q.text)))]
            assert got == sorted(carriers.id), q.qid
    if SHARED.is_dir():
        with (SHARED / "families.csv").open(newline="") as handle:
            partition = {row["family"]: row["partition"] for row in csv.DictReader(handle)}
        family_of = dict(zip(frame.id, frame.family, strict=True))
        for qid, groups in exact.items():
            for item_id in (i for g in groups for i in g):
                assert partition.get(family_of[item_id]) == "dev", (qid, item_id)


@pytest.mark.skipif(not HAS_BUILD, reason="needs build/memes-10k")
def test_no_match_phrases_are_absent_from_every_field() -> None:
    """Repeats the lexical half of AUDIT.md: no item holds a no-match query's phrase."""
    from mambomeme.corpus.schema import ALL_FIELDS

    frame = _frame()
    texts = []
    for _, row in frame.iterrows():
        parts = [
            str(row[c]) if isinstance(row[c], str | bool) else " ".join(map(str, row[c]))
            for c in ALL_FIELDS
        ]
        texts.append(normalise(" \n ".join(parts)).casefold())
    for q in _queries():
        if not q.answerable:
            phrase = _key(q.text.removesuffix(" memes"))
            assert not [t for t in texts if phrase in t], q.qid
