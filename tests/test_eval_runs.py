"""TREC run files and sidecars: format, round trip, refusals, version checks, the runner."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from test_eval_support import GOOD, fake_search, make_run, response, tiny, write_benchmark

from mambomeme.errors import BenchmarkError, BoundError, VersionMismatchError
from mambomeme.evaluation.benchmark import load_benchmark
from mambomeme.evaluation.runner import run_benchmark
from mambomeme.evaluation.runs import check_comparable, read_run, sidecar, write_run
from mambomeme.search.results import Filters, SearchResponse


def test_trec_lines_and_sidecars(tmp_path: Path) -> None:
    benchmark = tiny(tmp_path)
    answers = {**GOOD, "wrestling": BoundError("max_cues", "too many")}
    path = tmp_path / "runs" / "bm25.trec"
    write_run(path, make_run(benchmark, answers))
    lines = path.read_text().splitlines()
    assert lines[:3] == [
        "q-entity Q0 fx:1 1 10.0 bm25",
        "q-entity Q0 fx:2 2 9.0 bm25",
        "q-entity Q0 fx:3 3 8.0 bm25",
    ]
    assert not any(line.startswith(("q-topic ", "q-none-1 ")) for line in lines)
    errors = [json.loads(x) for x in sidecar(path, ".errors.jsonl").read_text().splitlines()]
    assert errors == [{"qid": "q-topic", "error": "BoundError: max_cues: too many"}]
    latency = [json.loads(x) for x in sidecar(path, ".latency.jsonl").read_text().splitlines()]
    assert len(latency) == len(benchmark.queries)
    assert {r["qid"]: r["errored"] for r in latency}["q-topic"] is True
    details = [json.loads(x) for x in sidecar(path, ".details.jsonl").read_text().splitlines()]
    assert details[0]["item_id"] == "fx:1" and details[0]["routes"] == ["lexical"]
    run = read_run(path, benchmark)
    assert run.rankings["q-entity"] == ("fx:1", "fx:2", "fx:3")
    assert "q-none-1" not in run.rankings and run.errors == {
        "q-topic": "BoundError: max_cues: too many"
    }
    assert run.latency_ms["q-entity"] == pytest.approx(50.0)


def test_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    benchmark = tiny(tmp_path)
    path = tmp_path / "bm25.trec"
    write_run(path, make_run(benchmark, GOOD))
    with pytest.raises(BenchmarkError, match="exists; pass --force"):
        write_run(path, make_run(benchmark, GOOD))
    write_run(path, make_run(benchmark, {**GOOD, "john cena": ["fx:3"]}), force=True)
    assert read_run(path, benchmark).rankings["q-entity"] == ("fx:3",)


def _written(tmp_path: Path) -> tuple[Path, Path]:
    benchmark = tiny(tmp_path)
    path = tmp_path / "bm25.trec"
    write_run(path, make_run(benchmark, GOOD))
    return benchmark.path, path


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda t: t.replace("fx:2 2 9.0", "fx:2 3 9.0", 1),
            r"bm25.trec:2: rank 3 of 'q-entity' should be 2",
        ),
        (
            lambda t: t.replace("fx:2 2 9.0", "fx:2 2 10.0", 1),
            r"bm25.trec:2: score 10.0 does not strictly",
        ),
        (lambda t: t.replace("fx:2 2 9.0", "fx:1 2 9.0", 1), r"bm25.trec:2: 'fx:1' listed twice"),
        (
            lambda t: t.replace("q-entity Q0 fx:1", "q-ghost Q0 fx:1", 1),
            r"bm25.trec:1: qid 'q-ghost'",
        ),
        (lambda t: t.replace(" bm25\n", " hybrid\n", 1), r"bm25.trec:1: system 'hybrid' differs"),
        (lambda t: t.replace(" Q0 ", " Q1 ", 1), r"bm25.trec:1: expected"),
        (
            lambda t: (
                t + "".join(f"q-visual Q0 fx:{20 + i} {i + 2} {9.0 - i} bm25\n" for i in range(10))
            ),
            r"more than 10 results",
        ),
    ],
)
def test_read_rejects_bad_run_lines(tmp_path: Path, edit: object, message: str) -> None:
    bench_dir, path = _written(tmp_path)
    path.write_text(edit(path.read_text()))  # type: ignore[operator]
    with pytest.raises(BenchmarkError, match=message):
        read_run(path, load_benchmark(bench_dir))


def test_read_rejects_bad_sidecars(tmp_path: Path) -> None:
    bench_dir, path = _written(tmp_path)
    benchmark = load_benchmark(bench_dir)
    errors = sidecar(path, ".errors.jsonl")
    errors.write_text(json.dumps({"qid": "q-entity", "error": "x"}) + "\n")
    with pytest.raises(BenchmarkError, match=r"errors.jsonl:1: 'q-entity' errored but has results"):
        read_run(path, benchmark)
    errors.write_text(json.dumps({"qid": "q-none-1", "error": ""}) + "\n")
    with pytest.raises(BenchmarkError, match=r"errors.jsonl:1: 'error' must be a non-empty"):
        read_run(path, benchmark)
    errors.write_text("")
    latency = sidecar(path, ".latency.jsonl")
    latency.write_text("\n".join(latency.read_text().splitlines()[1:]) + "\n")
    with pytest.raises(BenchmarkError, match=r"latency.jsonl: no record for 1 benchmark queries"):
        read_run(path, benchmark)
    errors.unlink()
    with pytest.raises(BenchmarkError, match=r"errors.jsonl: missing"):
        read_run(path, benchmark)


def test_version_mismatch_refused(tmp_path: Path) -> None:
    benchmark = tiny(tmp_path)
    bm25 = make_run(benchmark, GOOD, "bm25")
    hybrid = make_run(benchmark, GOOD, "hybrid")
    check_comparable(benchmark, {"a": bm25, "b": hybrid})
    for field, value in [
        ("judgement_set", "j2"),
        ("benchmark_version", "2"),
        ("corpus", "x@v1"),
        ("safety_policy", "v2"),
        ("score_version", "MMTS-Search-v0"),
        ("benchmark_sha256", "0" * 64),
    ]:
        other = dataclasses.replace(hybrid, meta=dataclasses.replace(hybrid.meta, **{field: value}))
        with pytest.raises(VersionMismatchError, match=f"b: {field} is"):
            check_comparable(benchmark, {"a": bm25, "b": other})
    other = make_run(benchmark, GOOD, "hybrid", manifest="f" * 64)
    with pytest.raises(VersionMismatchError, match="corpus_manifest_sha256 differs"):
        check_comparable(benchmark, {"a": bm25, "b": other})
    with pytest.raises(VersionMismatchError, match="system 'bm25' also in a"):
        check_comparable(benchmark, {"a": bm25, "b": bm25})
    rejudged = load_benchmark(
        write_benchmark(tmp_path / "j2", info={**benchmark.info.__dict__, "judgement_set": "j2"})
    )
    with pytest.raises(VersionMismatchError, match="judgement_set"):
        check_comparable(rejudged, {"a": bm25})


def test_runner_records_contract_violations_as_errors(tmp_path: Path) -> None:
    benchmark = tiny(tmp_path)
    seen: list[tuple[list[str], Filters]] = []
    good = fake_search(GOOD)

    def search(cues: list[str], filters: Filters) -> SearchResponse:
        seen.append((cues, filters))
        if cues[0] == "john cena":
            return response([f"fx:{i}" for i in range(11)])
        if cues[0] == "wrestling":
            return response(["fx:6", "fx:6"])
        return good(cues, filters)

    run = run_benchmark(benchmark, search, "hybrid", warmups=2)
    assert run.errors["q-entity"].startswith("ContractError: 11 results")
    assert run.errors["q-topic"] == "ContractError: item 'fx:6' returned twice"
    assert len(seen) == 2 + len(benchmark.queries)
    cues, filters = seen[2 + 4]  # q-concept-2 after the two warm-ups
    assert cues == ["cannot be seen", "unseen person"]
    assert seen[2 + 5][1] == Filters(kind="meme")
    assert "q-entity" not in run.rankings and run.rankings["q-quote"] == ("fx:5", "fx:4")
