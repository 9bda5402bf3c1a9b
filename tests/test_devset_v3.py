"""dev-v3 (written blind, issue 31): format, counts, hygiene (dev families only, texts new against
dev-v1/v2), the writers' rules re-checked against the corpus as the public data presents it
(concept queries share no content word with their targets' title, template name or caption),
and the locked check split."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from mambomeme.corpus.normalise import normalise
from mambomeme.corpus.sources import shared
from mambomeme.evaluation.benchmark import SLICES, Query, read_queries
from mambomeme.evaluation.overlap import shared_words
from mambomeme.evaluation.pooling import load_pool_config, read_exact_targets, read_partitions
from mambomeme.evaluation.split import read_split
from mambomeme.evaluation.writing import render

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT / "benchmarks" / "dev-v3"
SHARED = ROOT.parent / "shared"
MIN_ANSWERABLE_PER_SLICE = 40
MIN_NO_MATCH = 40
MIN_SAFETY = (40, 12)  # answerable, no-match


def _queries() -> list[Query]:
    return read_queries(DEV / "queries.jsonl")


def _writing() -> dict[str, dict[str, object]]:
    lines = (DEV / "writing.jsonl").read_text(encoding="utf-8").splitlines()
    return {row["qid"]: row for row in map(json.loads, lines)}


def test_counts_per_slice_and_subsets() -> None:
    queries = _queries()
    answerable = Counter(q.slice for q in queries if q.answerable)
    assert set(answerable) == set(SLICES)
    assert min(answerable.values()) >= MIN_ANSWERABLE_PER_SLICE, answerable
    assert sum(not q.answerable for q in queries) >= MIN_NO_MATCH
    safety = [q for q in queries if "safety" in q.subsets]
    assert sum(q.answerable for q in safety) >= MIN_SAFETY[0]
    assert sum(not q.answerable for q in safety) >= MIN_SAFETY[1]
    assert sum("multi_cue" in q.subsets for q in queries) >= 60
    assert sum("filter" in q.subsets for q in queries) >= 10


def test_texts_are_new_against_dev_v1_and_dev_v2() -> None:
    def key(text: str) -> str:
        return " ".join(normalise(text).casefold().split())

    earlier = {
        key(q.text)
        for v in ("dev-v1", "dev-v2")
        for q in read_queries(ROOT / "benchmarks" / v / "queries.jsonl")
    }
    assert not [q.qid for q in _queries() if key(q.text) in earlier]


def test_every_query_is_recorded_with_its_writer_and_rationale() -> None:
    writing = _writing()
    assert set(writing) == {q.qid for q in _queries()}
    assert {str(row["writer"]) for row in writing.values()} >= {"writer-a", "writer-b", "writer-c"}
    assert all(str(row["rationale"]).strip() for row in writing.values())
    nomatch = {q.qid for q in _queries() if not q.answerable}
    assert all(len(str(writing[qid].get("audit", ""))) >= 40 for qid in nomatch)
    audit = (DEV / "AUDIT.md").read_text(encoding="utf-8")
    assert all(f"| {qid} |" in audit for qid in nomatch)


def test_targets_are_dev_items_and_concepts_share_no_word_with_them() -> None:
    """Every gold item, exact target and hard negative is a dev-family item of memes-10k, and
    the QUERY-WRITING.md concept rule holds against the public rendering of the corpus."""
    partitions = read_partitions(SHARED / "benchmark" / "families.csv")
    records = shared.read_records({"selection": "memes-10k", "root": str(SHARED / "corpora")})
    items = {i.id: i for i in render(records, partitions)}
    config = load_pool_config(DEV / "pool.yaml")
    exact = read_exact_targets(DEV / "exact-targets.jsonl")
    for qid, ids in [*config.gold.items(), *config.hard_negatives.items()]:
        assert all(items[i].partition == "dev" for i in ids), qid
    for qid, groups in exact.items():
        assert all(items[i].partition == "dev" for g in groups for i in g), qid
    for line in (DEV / "pool-shipped.tsv").read_text().splitlines():
        assert items[line.split("\t")[1]].partition == "dev", line
    for query in _queries():
        assert partitions.get(query.family) == "dev", query.qid
        if query.slice == "concept" and query.answerable:
            gold = [
                *config.gold.get(query.qid, ()),
                *(i for g in exact.get(query.qid, []) for i in g),
            ]
            texts = [t for i in gold for t in (items[i].title, items[i].template, items[i].text)]
            assert not shared_words([query.text, *query.cues], texts), query.qid


def test_entity_and_quote_queries_have_exact_targets() -> None:
    exact = read_exact_targets(DEV / "exact-targets.jsonl")
    for query in _queries():
        if query.answerable and query.slice in ("entity", "quote"):
            assert exact.get(query.qid), query.qid


def test_check_split_holds_about_a_third_of_the_families() -> None:
    split = read_split(DEV)
    assert split is not None
    families = {q.family for q in _queries()}
    check = {f for f in families if split.side(f) == "check"}
    assert 0.25 <= len(check) / len(families) <= 0.42, (len(check), len(families))
    queries = _queries()
    check_queries = [q for q in queries if q.family in check]
    assert all(Counter(q.slice for q in check_queries)[s] >= 5 for s in SLICES)
