"""The embedding step on Ray Data (a local Ray with 2 CPUs, no network) gives the in-process
matrix byte for byte: same model, same batches."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mambomeme.corpus.ingest import load_items
from mambomeme.index.dense import document
from mambomeme.index.document_encoder import EncoderSpec
from mambomeme.index.executor import ExecutorConfig, embed_in_process, embed_on_ray, embedder


@pytest.mark.slow
def test_ray_embedding_equals_in_process_byte_for_byte(fixture_build: Path) -> None:
    pytest.importorskip("ray")
    docs = [document(item) for item in load_items(fixture_build)]
    spec = EncoderSpec("torch")
    local = embed_in_process(docs, 16, spec.open())
    on_ray = embed_on_ray(docs, 16, spec, ExecutorConfig("ray", ray_cpus=2, ray_actors=2))
    assert on_ray.shape == local.shape == (len(docs), 384)
    assert on_ray.dtype == local.dtype == np.float32
    assert on_ray.tobytes() == local.tobytes()


def test_in_process_is_the_default() -> None:
    spec = EncoderSpec("torch")
    embed = embedder(spec, ExecutorConfig(), encoder=_Fixed())
    assert embed(["a", "bbb", "cc"], 2).tolist() == [[1.0, 1.0], [3.0, 3.0], [2.0, 2.0]]


class _Fixed:
    """A stand-in encoder whose vector is the text's length (checks batching, not the model)."""

    device = "cpu"
    max_seq_length = 8
    dimension = 2

    def encode(self, texts: list[str], batch_size: int = 64, progress: bool = False) -> np.ndarray:
        return np.array([[len(t), len(t)] for t in texts], dtype=np.float32)
