"""dev-v1 queries: hygiene (dev families only), counts, subsets, exact targets from the data."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from mambomeme.evaluation.benchmark import SLICES
from mambomeme.evaluation.pooling import load_pool_config, read_exact_targets, read_queries

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT / "benchmarks" / "dev-v1"
SHARED = ROOT.parent / "shared" / "benchmark"
BUILD = ROOT / "build" / "memes-10k"


def test_counts_and_subsets() -> None:
    queries = read_queries(DEV / "queries.jsonl")
    for name in SLICES:
        assert sum(q.slice == name and q.answerable for q in queries) == 15, name
    assert sum(not q.answerable for q in queries) == 5
    assert sum("safety" in q.subsets and q.answerable for q in queries) == 15
    assert sum("safety" in q.subsets and not q.answerable for q in queries) == 5
    assert any("multi_cue" in q.subsets for q in queries)
    assert any("filter" in q.subsets for q in queries)
    for q in queries:
        assert ("multi_cue" in q.subsets) == bool(q.cues), q.qid
        assert ("filter" in q.subsets) == bool(q.filters), q.qid
    exact = read_exact_targets(DEV / "exact-targets.jsonl")
    need = {q.qid for q in queries if q.answerable and q.slice in ("entity", "quote")}
    assert set(exact) == need
    load_pool_config(DEV / "pool.yaml")


@pytest.mark.skipif(not SHARED.is_dir(), reason="needs ../shared/benchmark")
def test_every_query_targets_a_dev_family() -> None:
    with (SHARED / "families.csv").open(newline="") as handle:
        partition = {row["family"]: row["partition"] for row in csv.DictReader(handle)}
    for q in read_queries(DEV / "queries.jsonl"):
        assert partition.get(q.family) == "dev", (q.qid, q.family)


@pytest.mark.skipif(not (BUILD / "items.parquet").is_file(), reason="needs build/memes-10k")
def test_exact_targets_follow_from_the_corpus() -> None:
    """Entity: the template items of the query's family (imgflip and memegen, as
    template-equivalences.csv joins them); quote: every item whose OCR text holds the quote."""
    import pandas as pd

    from mambomeme.corpus.normalise import normalise
    from mambomeme.evaluation.pooling import item_family

    frame = pd.read_parquet(BUILD / "items.parquet")
    frame["family"] = frame["template_group"].map(item_family)
    text = frame["ocr_text"].map(lambda s: normalise(s).casefold())
    exact = read_exact_targets(DEV / "exact-targets.jsonl")
    with (SHARED / "template-equivalences.csv").open(newline="") as handle:
        pairs = {
            (f"imgflip-template:{r['imgflip575k_template']}", f"memegen:{r['memegen_template']}")
            for r in csv.DictReader(handle)
        }
    for q in read_queries(DEV / "queries.jsonl"):
        if q.qid not in exact:
            continue
        got = sorted(i for g in exact[q.qid] for i in g)
        if q.slice == "entity":
            mine = frame[(frame.kind == "template") & (frame.family == q.family)]
            assert got == sorted(mine.id), q.qid
            assert len(exact[q.qid]) == 1
            if len(got) == 2:
                assert tuple(sorted(got)) in pairs, q.qid
        else:
            wanted = normalise(q.text).casefold()
            carriers = frame[text.str.contains(re.escape(wanted))]
            assert got == sorted(carriers.id), q.qid
            assert all(len(g) == 1 for g in exact[q.qid])
    json.dumps(exact)  # stays plain data


@pytest.mark.skipif(not (BUILD / "items.parquet").is_file(), reason="needs build/memes-10k")
def test_no_match_phrases_are_absent_from_every_field() -> None:
    """Repeats the lexical half of AUDIT.md: no item holds a no-match query's phrase."""
    import pandas as pd

    from mambomeme.corpus.normalise import normalise
    from mambomeme.corpus.schema import ALL_FIELDS

    frame = pd.read_parquet(BUILD / "items.parquet")
    texts = []
    for _, row in frame.iterrows():
        parts = [
            str(row[c]) if isinstance(row[c], str | bool) else " ".join(map(str, row[c]))
            for c in ALL_FIELDS
        ]
        texts.append(normalise(" \n ".join(parts)).casefold())
    for q in read_queries(DEV / "queries.jsonl"):
        if not q.answerable:
            phrase = normalise(q.text.removesuffix(" memes")).casefold()
            assert not [t for t in texts if phrase in t], q.qid
