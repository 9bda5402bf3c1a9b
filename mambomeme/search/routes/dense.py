"""The dense route: the cue's embedding against the item matrix (exact, masked NumPy search).

The query encoder (ONNX or torch, index/query_encoder.py) and each variant's matrix
(`dense/dense.npy`, or `dense/dense-no-<ablation>.npy` for an ablation) load on first use, once
per process. Evidence: cosine >= `search.min_cosine`.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from mambomeme.index.query_encoder import open_query_encoder
from mambomeme.search.results import RouteHit
from mambomeme.search.routes.base import (
    CueEvidence,
    CueHits,
    Lap,
    RouteContext,
    RouteQuery,
    Signal,
)

if TYPE_CHECKING:
    from mambomeme.index.dense_index import DenseIndex

DENSE_DIR = "dense"  # = index.build.DENSE_DIR (not imported: it pulls in pandas)


class DenseRoute:
    name: ClassVar[str] = "dense"
    evidence_param: ClassVar[str] = "min_cosine"
    signal: ClassVar[Signal] = Signal.MEANING

    def __init__(self, context: RouteContext) -> None:
        self.context = context
        self.encoder: Any = None  # OnnxQueryEncoder or Encoder, opened by `load`
        self._indexes: dict[str, DenseIndex] = {}
        self._lock = threading.Lock()

    def ready(self, variant: str) -> bool:
        return variant in self._indexes

    def load(self, variant: str) -> None:
        from mambomeme.index.dense import DenseFiles
        from mambomeme.index.dense_index import DenseIndex

        c = self.context
        with self._lock:
            if self.encoder is None:
                self.encoder = open_query_encoder(
                    c.build_dir, c.query_encoder, c.device, c.query_threads
                )
            if variant not in self._indexes:
                files = DenseFiles.in_dir(c.build_dir / DENSE_DIR, variant)
                self._indexes[variant] = DenseIndex(files, c.items.ids, c.build_dir, c.dense_scan)

    def embedding_manifest(self, variant: str) -> Path | None:
        from mambomeme.index.dense import DenseFiles

        path = DenseFiles.in_dir(self.context.build_dir / DENSE_DIR, variant).manifest
        return path if path.is_file() else None

    def candidates(self, query: RouteQuery, lap: Lap) -> list[CueHits]:
        if not self.ready(query.variant):
            self.load(query.variant)
        texts = [cue.text for cue in query.cues]
        vectors = self.encoder.encode(texts, batch_size=len(texts))
        lap("encode")
        index = self._indexes[query.variant]
        return [
            CueHits(cue.index, index.search(vector, query.mask, query.depth))
            for cue, vector in zip(query.cues, vectors, strict=True)
        ]

    def has_evidence(self, hit: RouteHit, cue: CueEvidence, minimum: float) -> bool:
        return hit.score >= minimum
