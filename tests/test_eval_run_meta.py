"""The typed run metadata (evaluation/run_meta.py): the .meta.json bytes survive a round trip,
unknown keys included, and a malformed file is a BenchmarkError naming it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from test_eval_support import make_run, tiny

from mambomeme.errors import BenchmarkError
from mambomeme.evaluation.run_meta import Provenance, RunMeta, read_meta
from mambomeme.evaluation.runs import read_run, run_meta, sidecar, write_run

ROOT = Path(__file__).resolve().parents[1]
REPO_METAS = sorted(ROOT.glob("runs*/**/*.meta.json"))  # pipeline outputs, when present


def old_bytes(meta: dict[str, Any]) -> str:
    """How runs.write_run serialised a meta dict before the typed record."""
    return json.dumps(dict(meta), indent=2, sort_keys=True) + "\n"


def written_by_run(**changes: Any) -> dict[str, Any]:
    """A meta as `mambomeme run` writes it (the fixture's hybrid run), with `changes`."""
    meta: dict[str, Any] = {
        "benchmark": "fixture",
        "benchmark_partition": "dev",
        "benchmark_sha256": "5" * 64,
        "benchmark_version": "v1",
        "build": "build/fixture",
        "code_commit": None,
        "corpus": "fixture@v1",
        "corpus_manifest": "manifests/corpus-fixture.json",
        "corpus_manifest_sha256": "7" * 64,
        "embedding_manifest": None,
        "embedding_manifest_sha256": None,
        "engine_system": "bm25",
        "format": "mambomeme-run-v1",
        "judgement_set": "fixture-j2",
        "limit": 10,
        "safety_policy": "v1",
        "score_version": "MMTS-Search-v1",
        "system": "shipped",
    }
    meta.update(changes)
    return {k: v for k, v in meta.items() if v is not ...}


@pytest.mark.parametrize(
    "meta",
    [
        written_by_run(),
        written_by_run(selection_sha256="a" * 64, embedding_manifest="d.json"),
        written_by_run(note={"by": "hand"}, weights=[1, 2.5]),  # keys this code does not know
        {
            k: v
            for k, v in written_by_run().items()
            if k not in {f for f in Provenance.__dataclass_fields__}
        },
    ],
    ids=["run", "hidden-run", "unknown-keys", "hand-made"],
)
def test_meta_round_trips_byte_for_byte(tmp_path: Path, meta: dict[str, Any]) -> None:
    path = tmp_path / "x.trec.meta.json"
    path.write_text(old_bytes(meta), encoding="utf-8")
    typed = read_meta(path)
    assert typed.to_json() == path.read_text(encoding="utf-8")
    assert typed.to_dict() == meta and list(typed.to_dict()) == sorted(meta)  # scorecard order


def test_typed_fields_are_attributes(tmp_path: Path) -> None:
    meta = RunMeta.from_dict(written_by_run(selection_sha256="a" * 64, extra_key=3), "m")
    assert meta.provenance is not None and meta.provenance.engine_system == "bm25"
    assert meta.provenance.limit == 10 and meta.provenance.embedding_manifest is None
    assert meta.selection_sha256 == "a" * 64 and dict(meta.extra) == {"extra_key": 3}
    assert meta.compared()["judgement_set"] == "fixture-j2"


def test_run_meta_extra_keys_survive_write_and_read(tmp_path: Path) -> None:
    benchmark = tiny(tmp_path)
    run = make_run(benchmark, {}, "bm25")
    meta = run_meta(benchmark, "bm25", "m" * 64, extra={"experiment": "e1"})
    out = tmp_path / "runs" / "bm25.trec"
    write_run(out, dataclasses.replace(run, meta=meta))
    again = read_run(out, benchmark)
    assert again.meta == meta and again.meta.extra == {"experiment": "e1"}
    assert sidecar(out, ".meta.json").read_text("utf-8") == old_bytes(meta.to_dict())


@pytest.mark.parametrize("path", REPO_METAS, ids=[str(p.relative_to(ROOT)) for p in REPO_METAS])
def test_pipeline_metas_round_trip(path: Path) -> None:
    assert read_meta(path).to_json() == path.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "invalid JSON"),
        ("[1, 2]", "not a mambomeme-run-v1 meta file"),
        (json.dumps(written_by_run(format="other")), "not a mambomeme-run-v1 meta file"),
        (json.dumps(written_by_run(judgement_set=...)), "missing key 'judgement_set'"),
        (json.dumps(written_by_run(corpus=3)), "key 'corpus' must be a string"),
        (json.dumps(written_by_run(build=...)), "missing key 'build'"),
        (json.dumps(written_by_run(limit="10")), "key 'limit' has the wrong type"),
        (json.dumps(written_by_run(build=None)), "key 'build' has the wrong type"),
        (json.dumps(written_by_run(selection_sha256=1)), "'selection_sha256' must be a string"),
    ],
)
def test_malformed_meta_is_a_typed_error_naming_the_file(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "bad.trec.meta.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BenchmarkError, match=message) as caught:
        read_meta(path)
    assert str(path) in str(caught.value)


def test_missing_meta_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(BenchmarkError, match="missing"):
        read_meta(tmp_path / "absent.trec.meta.json")
