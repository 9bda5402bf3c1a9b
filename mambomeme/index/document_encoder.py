"""Which model embeds the documents at build time, and the batches it embeds them in.

`dense.document_encoder: torch` (the default) embeds with sentence-transformers, as before;
`onnx` exports the same all-MiniLM-L6-v2 to ONNX (query_encoder.export_query_encoder: checked
against torch on fixed probes at export) and runs it in ONNX Runtime with one intra-op thread
per core. The matrix of either is L2-normalised float32; the two agree to cosine >= 0.9999 per
document (tests/test_document_encoder.py, scripts/bench_doc_encoder.py).

Batches are formed here, not inside the model library: documents sorted longest first (a stable
sort, so ties keep input order) and cut into `batch_size` slices, each embedded as one padded
batch. Every executor (in-process or Ray, index/executor.py) embeds exactly these batches, so
their matrices are equal byte for byte.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from mambomeme.errors import MamboMemeError

KINDS = ("torch", "onnx")


class DocumentEncoder(Protocol):
    """What the build needs of an encoder (dense.Encoder and query_encoder.OnnxQueryEncoder)."""

    device: str

    def encode(
        self, texts: Sequence[str], batch_size: int = 64, progress: bool = False
    ) -> np.ndarray: ...

    @property
    def max_seq_length(self) -> int: ...

    @property
    def dimension(self) -> int: ...


@dataclass(frozen=True)
class EncoderSpec:
    """Enough to open the same encoder in another process (a Ray actor): params
    dense.document_encoder, dense.device, the length cap and, for onnx, the exported folder."""

    kind: str = "torch"
    device: str = "cpu"
    max_seq_length: int | None = None
    onnx_dir: str = ""  # the export (model.onnx, tokenizer.json, manifest.json) for kind onnx
    threads: int = 0  # intra-op threads; 0 = the library's default (one per core)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise MamboMemeError(
                f"params dense.document_encoder is {self.kind!r}; expected one of {KINDS}"
            )
        if self.kind == "onnx" and not self.onnx_dir:
            raise MamboMemeError("document encoder onnx needs the exported folder (onnx_dir)")

    def open(self) -> DocumentEncoder:
        if self.kind == "onnx":
            from mambomeme.index.query_encoder import OnnxQueryEncoder

            return OnnxQueryEncoder(Path(self.onnx_dir), self.threads or None, self.max_seq_length)
        from mambomeme.index.dense import Encoder

        return Encoder(self.device, self.max_seq_length, self.threads or None)


def export_for_documents(folder: Path, max_seq_length: int | None) -> Path:
    """Export the model to ONNX in `folder` (checked against torch on the export's probes)."""
    from mambomeme.index.query_encoder import export_query_encoder

    export_query_encoder(folder, max_seq_length)
    return folder


def batch_slices(texts: Sequence[str], batch_size: int) -> list[np.ndarray]:
    """Row numbers of each batch: longest documents first (stable), `batch_size` at a time."""
    if batch_size < 1:
        raise MamboMemeError(f"dense.batch_size must be >= 1, got {batch_size}")
    order = np.argsort([-len(t) for t in texts], kind="stable")
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def encode_batch(encoder: DocumentEncoder, texts: Sequence[str]) -> np.ndarray:
    """One batch as one padded forward pass: [len(texts), dimension] float32."""
    vectors = encoder.encode(list(texts), batch_size=max(1, len(texts)))
    return np.ascontiguousarray(vectors, dtype=np.float32)


def sentence_transformers_batches(texts: Sequence[str], batch_size: int) -> list[np.ndarray]:
    """Row numbers of the batches sentence-transformers' own `encode(texts, batch_size)` forms
    (6.x: texts sorted by -len with NumPy's default argsort, then `batch_size` at a time), so
    a caller that embeds with `Encoder.encode` in one call (the safety model's features) gets
    the same padded batches when they are spread over Ray actors. Within a batch the library
    sorts again; a row's vector does not depend on its place in the batch (checked by
    tests/test_ray_map_steps.py against the one-call result)."""
    if batch_size < 1:
        raise MamboMemeError(f"dense.batch_size must be >= 1, got {batch_size}")
    order = np.argsort([-len(t) for t in texts])
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
