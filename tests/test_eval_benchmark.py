"""Benchmark folders load exactly as FORMAT.md lays them out; bad ones name file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_eval_support import EXACT, INFO, QRELS, QUERIES, write_benchmark

from mambomeme.errors import BenchmarkError
from mambomeme.evaluation.benchmark import load_benchmark


def test_loads_every_file(tmp_path: Path) -> None:
    b = load_benchmark(write_benchmark(tmp_path / "b"))
    assert b.info.name == "tiny" and b.info.provisional is True
    assert [q.qid for q in b.queries][:2] == ["q-entity", "q-quote"]
    concept = {q.qid: q for q in b.queries}["q-concept-2"]
    assert concept.all_cues == ["cannot be seen", "unseen person"]
    assert {q.qid: q for q in b.queries}["q-visual"].filter_dict == {"kind": "meme"}
    assert b.qrels["q-entity"] == {"fx:1": 3, "fx:2": 2, "fx:3": 1}
    assert b.exact["q-quote"] == (("fx:4", "fx:13"),)
    assert b.safety["fx:1"] == "safe"
    assert len(b.sha256) == 64


def test_checksum_changes_with_any_file(tmp_path: Path) -> None:
    first = load_benchmark(write_benchmark(tmp_path / "a")).sha256
    qrels = [*QRELS[:-1], ("q-none-2", "fx:12", 1)]
    assert load_benchmark(write_benchmark(tmp_path / "b", qrels=qrels)).sha256 != first


def _query(qid: str, **changes: object) -> list[dict[str, object]]:
    return [{**q, **changes} if q["qid"] == qid else q for q in QUERIES]


CASES = [
    (
        "info missing key",
        {"info": {k: v for k, v in INFO.items() if k != "judgement_set"}},
        "benchmark.json:1: missing key 'judgement_set'",
    ),
    ("info bad partition", {"info": {**INFO, "partition": "test"}}, "benchmark.json:4: partition"),
    ("info unknown key", {"info": {**INFO, "extra": 1}}, "benchmark.json:9: unknown key 'extra'"),
    ("bad slice", {"queries": _query("q-topic", slice="tag")}, "queries.jsonl:3: slice 'tag'"),
    (
        "missing key",
        {"queries": [{k: v for k, v in q.items() if k != "family"} for q in QUERIES]},
        "queries.jsonl:1: missing key 'family'",
    ),
    (
        "unknown key",
        {"queries": _query("q-quote", lang="en")},
        "queries.jsonl:2: unknown key 'lang'",
    ),
    (
        "duplicate qid",
        {"queries": [*QUERIES, QUERIES[0]]},
        "queries.jsonl:10: duplicate qid 'q-entity' (first at",
    ),
    (
        "bad subset",
        {"queries": _query("q-quote", subsets=["adversarial"])},
        "queries.jsonl:2: 'subsets'",
    ),
    (
        "bad filter",
        {"queries": _query("q-quote", filters={"colour": "red"})},
        "queries.jsonl:2: filter 'colour'",
    ),
    (
        "answerable not bool",
        {"queries": _query("q-quote", answerable="yes")},
        "queries.jsonl:2: 'answerable'",
    ),
    ("grade 4", {"qrels": [*QRELS, ("q-quote", "fx:12", 4)]}, "qrels.txt:17: grade must be"),
    ("grade -1", {"qrels": [("q-entity", "fx:0", -1), *QRELS]}, "qrels.txt:1: grade must be"),
    ("unknown qid", {"qrels": [*QRELS, ("q-ghost", "fx:1", 1)]}, "qrels.txt:17: qid 'q-ghost'"),
    (
        "duplicate judgement",
        {"qrels": [*QRELS, ("q-entity", "fx:1", 2)]},
        "qrels.txt:17: duplicate judgement",
    ),
    (
        "no-match with grade 2",
        {"qrels": [*QRELS, ("q-none-1", "fx:1", 2)]},
        "qrels.txt:17: 'q-none-1' is a no-match query",
    ),
    (
        "answerable without relevant",
        {"qrels": [r for r in QRELS if r[0] != "q-visual"]},
        "queries.jsonl:6: answerable query 'q-visual' has no qrels with grade >= 2",
    ),
    (
        "entity without exact",
        {"exact": {"q-quote": EXACT["q-quote"]}},
        "queries.jsonl:1: entity query 'q-entity' has no exact-target groups",
    ),
    ("empty group", {"exact": {**EXACT, "q-topic": [[]]}}, "exact.jsonl:3: 'groups' must be"),
    (
        "exact for no-match",
        {"exact": {**EXACT, "q-none-1": [["fx:11"]]}},
        "exact.jsonl:3: 'q-none-1' is a no-match query",
    ),
    (
        "safety bad label",
        {"safety": {**{i: "safe" for _, i, _ in QRELS}, "fx:1": "maybe"}},
        "safety.tsv:1: safety label must be",
    ),
    (
        "safety missing judged item",
        {"safety": {i: "safe" for _, i, _ in QRELS if i != "fx:10"}},
        "qrels.txt:12: judged item 'fx:10' has no label",
    ),
]


@pytest.mark.parametrize(("name", "changes", "message"), CASES, ids=[c[0] for c in CASES])
def test_rejects_name_file_and_line(
    tmp_path: Path, name: str, changes: dict[str, object], message: str
) -> None:
    root = write_benchmark(tmp_path / "b", **changes)  # type: ignore[arg-type]
    with pytest.raises(BenchmarkError) as caught:
        load_benchmark(root)
    assert str(root) in str(caught.value)
    assert message in str(caught.value)


def test_rejects_bad_lines(tmp_path: Path) -> None:
    root = write_benchmark(tmp_path / "b")
    with (root / "qrels.txt").open("a") as handle:
        handle.write("q-entity 0 fx:1\n")
    with pytest.raises(BenchmarkError, match=r"qrels.txt:17: expected"):
        load_benchmark(root)
    root = write_benchmark(tmp_path / "c")
    (root / "queries.jsonl").write_text("{not json}\n")
    with pytest.raises(BenchmarkError, match=r"queries.jsonl:1: invalid JSON"):
        load_benchmark(root)
    root = write_benchmark(tmp_path / "d")
    (root / "safety.tsv").write_text((root / "safety.tsv").read_text() + "fx:1\tsafe\n")
    with pytest.raises(BenchmarkError, match=r"safety.tsv:\d+: duplicate safety label"):
        load_benchmark(root)
    root = write_benchmark(tmp_path / "e")
    (root / "exact.jsonl").unlink()
    with pytest.raises(BenchmarkError, match="exact.jsonl: missing"):
        load_benchmark(root)


def test_info_json_must_be_an_object(tmp_path: Path) -> None:
    root = write_benchmark(tmp_path / "b")
    (root / "benchmark.json").write_text(json.dumps([1]))
    with pytest.raises(BenchmarkError, match="benchmark.json:1: expected a JSON object"):
        load_benchmark(root)
