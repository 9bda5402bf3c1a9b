"""The build's document encoder: ONNX agrees with torch on every fixture document (cosine >=
0.9999), batches are formed one way for every executor, the manifest and the reuse check know
which encoder embedded the matrix, and bad params are refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mambomeme.corpus.ingest import load_items
from mambomeme.errors import MamboMemeError
from mambomeme.index.dense import DenseFiles, build_dense, document
from mambomeme.index.document_encoder import EncoderSpec, batch_slices
from mambomeme.index.executor import ExecutorConfig, embed_in_process
from mambomeme.index.query_encoder import QUERY_ENCODER_DIR


def test_batches_are_longest_first_and_stable() -> None:
    texts = ["bb", "a", "cccc", "dd", "", "eeee"]
    slices = batch_slices(texts, 4)
    assert [list(s) for s in slices] == [[2, 5, 0, 3], [1, 4]]
    assert sorted(int(i) for s in slices for i in s) == list(range(len(texts)))
    assert batch_slices([], 8) == []
    with pytest.raises(MamboMemeError, match="batch_size"):
        batch_slices(texts, 0)


def test_params_are_checked() -> None:
    with pytest.raises(MamboMemeError, match="dense.document_encoder"):
        EncoderSpec("tensorrt")
    with pytest.raises(MamboMemeError, match="onnx_dir"):
        EncoderSpec("onnx")
    assert ExecutorConfig.from_params({}) == ExecutorConfig("in-process", "", 0, 0)
    assert ExecutorConfig.from_params({"executor": "ray", "ray_address": "auto"}).ray_address == (
        "auto"
    )
    with pytest.raises(MamboMemeError, match="build.executor"):
        ExecutorConfig.from_params({"executor": "spark"})


@pytest.mark.slow
def test_onnx_documents_agree_with_torch(fixture_build: Path) -> None:
    docs = [document(item) for item in load_items(fixture_build)]
    torch = embed_in_process(docs, 16, EncoderSpec("torch").open())
    onnx_spec = EncoderSpec("onnx", onnx_dir=str(fixture_build / QUERY_ENCODER_DIR))
    onnx = embed_in_process(docs, 16, onnx_spec.open())
    assert onnx.shape == torch.shape == (len(docs), 384) and onnx.dtype == np.float32
    cosine = (onnx.astype(np.float64) * torch.astype(np.float64)).sum(axis=1)
    assert cosine.min() >= 0.9999
    assert np.allclose(np.linalg.norm(onnx, axis=1), 1.0, atol=1e-5)


@pytest.mark.slow
def test_manifest_and_reuse_know_the_encoder(fixture_build: Path, tmp_path: Path) -> None:
    items = load_items(fixture_build)[:12]
    files = DenseFiles.in_dir(tmp_path)
    torch = EncoderSpec("torch").open()
    first = build_dense(items, files, torch, 8, "corpus")
    onnx = EncoderSpec("onnx", onnx_dir=str(fixture_build / QUERY_ENCODER_DIR)).open()
    second = build_dense(items, files, onnx, 8, "corpus", encoder_kind="onnx")
    assert (first["document_encoder"], second["document_encoder"]) == ("torch", "onnx")
    assert second["reused"] is False  # a torch matrix is not taken for an onnx build
    third = build_dense(items, files, onnx, 8, "corpus", encoder_kind="onnx")
    assert third["reused"] is True and third["matrix_sha256"] == second["matrix_sha256"]
