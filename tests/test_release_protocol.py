"""The protocol refuses tuning on hidden, mismatched comparisons and reuse of an exposed version.

The hidden benchmark here is a synthetic folder made in tmp_path with placeholder query text
about the fixture corpus: no hidden family is named or guessed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mambomeme.errors import (
    ExposedBenchmarkError,
    HoldoutNotAllowedError,
    IncomparableError,
    ProtocolError,
    TuningOnHiddenError,
)
from mambomeme.release.protocol import (
    benchmark_checksum,
    check_baselines,
    check_comparable,
    check_holdout_allowed,
    check_tuning_allowed,
    read_benchmark_meta,
    read_ledger,
    record_exposure,
    selection_fingerprint,
)


def make_bench(root: Path, partition: str, version: str = "v1", **extra: Any) -> Path:
    root.mkdir(parents=True)
    meta = {
        "name": f"fixture-{partition}",
        "version": version,
        "partition": partition,
        "corpus": "fixture@v1",
        "judgement_set": "j1",
        "provisional": True,
        "exposed": False,
        **extra,
    }
    (root / "benchmark.json").write_text(json.dumps(meta), "utf-8")
    (root / "queries.jsonl").write_text('{"qid": "q1", "text": "john cena"}\n', "utf-8")
    (root / "qrels.txt").write_text("q1 0 fixture:1 3\n", "utf-8")
    return root


def selection_for(dev: Path, objective: float = 0.5) -> dict[str, Any]:
    return {
        "config": {"rrf_k": 60},
        "objective": objective,
        "benchmark": {"name": "fixture-dev", "version": "v1", "checksum": benchmark_checksum(dev)},
    }


def versions(**change: Any) -> dict[str, Any]:
    base = {
        "benchmark": "fixture-hidden",
        "benchmark_version": "v1",
        "corpus": "fixture@v1",
        "judgement_set": "j1",
        "safety_policy": "v1",
        "score_version": "MMTS-Search-v1",
        "hardware": "cpu-a",
        "interface": "cli-v1",
        "system": "hybrid",
        "selection_sha256": "s1",
    }
    base.update(change)
    return base


def test_tuning_refuses_hidden_and_unknown_partitions() -> None:
    check_tuning_allowed({"name": "b", "version": "v1", "partition": "dev"})
    with pytest.raises(TuningOnHiddenError):
        check_tuning_allowed({"name": "b", "version": "v1", "partition": "hidden"})
    with pytest.raises(ProtocolError, match="partition"):
        check_tuning_allowed({"name": "b", "version": "v1", "partition": "test"})


def test_checksum_covers_names_and_bytes(tmp_path: Path) -> None:
    dev = make_bench(tmp_path / "dev", "dev")
    first = benchmark_checksum(dev)
    (dev / "qrels.txt").write_text("q1 0 fixture:1 2\n", "utf-8")
    second = benchmark_checksum(dev)
    (dev / "qrels.txt").rename(dev / "qrels2.txt")
    assert len({first, second, benchmark_checksum(dev)}) == 3


def test_holdout_needs_hidden_frozen_selection_and_matching_dev(tmp_path: Path) -> None:
    dev = make_bench(tmp_path / "dev", "dev")
    hidden = read_benchmark_meta(make_bench(tmp_path / "held", "hidden"))
    selection = selection_for(dev)
    check_holdout_allowed(hidden, selection, [], dev)
    with pytest.raises(HoldoutNotAllowedError, match="partition 'hidden'"):
        check_holdout_allowed(read_benchmark_meta(dev), selection, [], dev)
    with pytest.raises(HoldoutNotAllowedError, match="no frozen selection"):
        check_holdout_allowed(hidden, None, [], dev)
    with pytest.raises(HoldoutNotAllowedError, match="not a dev benchmark"):
        check_holdout_allowed(hidden, selection, [], tmp_path / "held")
    (dev / "qrels.txt").write_text("q1 0 fixture:2 3\n", "utf-8")  # dev changed after tuning
    with pytest.raises(HoldoutNotAllowedError, match="does not match"):
        check_holdout_allowed(hidden, selection, [], dev)
    other_corpus = read_benchmark_meta(make_bench(tmp_path / "held2", "hidden", corpus="x@v1"))
    with pytest.raises(HoldoutNotAllowedError, match="corpus"):
        check_holdout_allowed(other_corpus, selection_for(dev), [], dev)


def test_exposed_hidden_version_is_refused_for_a_later_selection(tmp_path: Path) -> None:
    dev = make_bench(tmp_path / "dev", "dev")
    hidden_dir = make_bench(tmp_path / "held", "hidden")
    hidden = read_benchmark_meta(hidden_dir)
    ledger_path = tmp_path / "releases" / "exposed.jsonl"
    first, later = selection_for(dev, 0.5), selection_for(dev, 0.6)
    check_holdout_allowed(hidden, first, read_ledger(ledger_path), dev)
    record_exposure(
        ledger_path, hidden, benchmark_checksum(hidden_dir), [selection_fingerprint(first)]
    )
    ledger = read_ledger(ledger_path)
    assert [(e.name, e.version) for e in ledger] == [("fixture-hidden", "v1")]
    check_holdout_allowed(hidden, first, ledger, dev)  # rescoring the same frozen selection
    with pytest.raises(ExposedBenchmarkError, match="fresh hidden version"):
        check_holdout_allowed(hidden, later, ledger, dev)
    fresh = read_benchmark_meta(make_bench(tmp_path / "held-v2", "hidden", version="v2"))
    check_holdout_allowed(fresh, later, ledger, dev)
    marked = read_benchmark_meta(
        make_bench(tmp_path / "held-v3", "hidden", version="v3", exposed=True)
    )
    with pytest.raises(ExposedBenchmarkError, match="marked exposed"):
        check_holdout_allowed(marked, later, ledger, dev)
    # the ledger only grows
    record_exposure(ledger_path, fresh, "c2", [selection_fingerprint(later)])
    assert len(read_ledger(ledger_path)) == 2
    assert ledger_path.read_text("utf-8").splitlines()[0] == json.dumps(
        {
            "checksum": ledger[0].checksum,
            "name": "fixture-hidden",
            "selection_sha256s": [selection_fingerprint(first)],
            "time": ledger[0].time,
            "version": "v1",
        },
        sort_keys=True,
    )


def test_comparison_refuses_mismatched_versions() -> None:
    check_comparable(versions(), versions(system="bm25"))
    for key, value in [
        ("benchmark_version", "v2"),
        ("corpus", "memes-10k@v1"),
        ("judgement_set", "j2"),
        ("safety_policy", "v2"),
        ("hardware", "cpu-b"),
    ]:
        with pytest.raises(IncomparableError, match=key):
            check_comparable(versions(), versions(**{key: value}))
    missing = versions()
    del missing["judgement_set"]
    with pytest.raises(IncomparableError, match="lacks 'judgement_set'"):
        check_comparable(missing, missing)


def test_comparison_refuses_an_exposed_version_for_another_release(tmp_path: Path) -> None:
    ledger_path = tmp_path / "exposed.jsonl"
    record_exposure(ledger_path, {"name": "fixture-hidden", "version": "v1"}, "c1", ["s1", "s2"])
    ledger = read_ledger(ledger_path)
    check_comparable(versions(selection_sha256="s1"), versions(selection_sha256="s2"), ledger)
    with pytest.raises(ExposedBenchmarkError, match="side b"):
        check_comparable(versions(selection_sha256="s1"), versions(selection_sha256="s3"), ledger)


def test_baselines_must_all_be_rerun() -> None:
    check_baselines(["bm25", "dense", "hybrid", "hybrid-no-tags"])
    with pytest.raises(HoldoutNotAllowedError, match="dense"):
        check_baselines(["bm25", "hybrid"])


def test_malformed_ledger_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "exposed.jsonl"
    path.write_text('{"name": "x"}\n', "utf-8")
    with pytest.raises(ProtocolError, match="exposed.jsonl:1"):
        read_ledger(path)
