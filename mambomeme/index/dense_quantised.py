"""A quantised first pass over the dense matrix, then exact float32 rescoring: fewer bytes per
query, the exact scan's answers.

The float32 matrix is copied into faiss `IndexScalarQuantizer` (QT_8bit: one byte per dimension,
a trained min and range per dimension; a quarter of the bytes), split into one shard per thread
so that a single query scans on every core (faiss scans one query on one thread). Each shard
returns its top `rescore_factor x depth` eligible rows by approximate inner product (the
eligibility mask goes in as a faiss `IDSelectorBitmap`, so masked rows are never candidates);
the candidates are rescored with the float32 matrix and ordered exactly as the exact scan orders
(score, then row).

Exactness is certified per query, not hoped for. At build the largest decoding error of each
dimension, err[d] = max over rows |x[d] - decode(x)[d]|, is measured on the matrix itself, so
for every row |<q, x> - <q, decode(x)>| <= sum_d |q[d]| * err[d] + MARGIN (MARGIN covers float32
rounding in both sums). A row that no shard returned has an approximate score at most its
shard's cut-off, hence an exact score at most `max cut-off + bound`. When that is below the
depth-th exact score among the candidates, no other row can enter the top `depth` and the answer
is the exact scan's; otherwise the query falls back to the exact scan (counted in `fallbacks`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from mambomeme.errors import MamboMemeError

SCANS = ("exact", "sq8")
# Float32 rounding of a 384-term dot product of unit vectors is below 384 * 2**-24 * 1 ~ 2.3e-5
# per sum; the bound adds it twice with room to spare.
MARGIN = 1e-4
DECODE_CHUNK = 65536  # rows decoded at a time when measuring the quantisation error

Hits = list[tuple[int, float]]


@dataclass(frozen=True)
class ScanConfig:
    """params dense.scan (exact | sq8), dense.rescore_factor and dense.scan_threads."""

    kind: str = "exact"
    rescore_factor: int = 4  # candidates per shard = rescore_factor x depth
    threads: int = 0  # shards scanned in parallel; 0 = one per core

    @classmethod
    def from_params(cls, dense: dict[str, Any]) -> ScanConfig:
        config = cls(
            str(dense.get("scan", "exact")),
            int(dense.get("rescore_factor", 4)),
            int(dense.get("scan_threads", 0)),
        )
        if config.kind not in SCANS:
            raise MamboMemeError(f"params dense.scan is {config.kind!r}; expected one of {SCANS}")
        if config.rescore_factor < 1:
            raise MamboMemeError(
                f"params dense.rescore_factor must be >= 1, got {config.rescore_factor}"
            )
        if config.threads < 0:
            raise MamboMemeError(f"params dense.scan_threads must be >= 0, got {config.threads}")
        return config


EXACT = ScanConfig()


class QuantisedScan:
    """The SQ8 shards of a float32 matrix, with the per-dimension decoding error."""

    def __init__(self, matrix: np.ndarray, rescore_factor: int = 4, threads: int = 0) -> None:
        import faiss

        if matrix.dtype != np.float32 or matrix.ndim != 2:
            raise MamboMemeError(f"matrix must be 2-d float32, got {matrix.shape} {matrix.dtype}")
        self.matrix = matrix
        self.rescore_factor = rescore_factor
        rows, dim = matrix.shape
        shards = max(1, min(threads or (os.cpu_count() or 1), max(1, rows // 1024)))
        # shard bounds on multiples of 8, so each shard's mask is a whole-byte slice of the bitmap
        step = -(-rows // shards // 8) * 8 or 8
        self.bounds = [(lo, min(lo + step, rows)) for lo in range(0, rows, step)]
        trained = faiss.IndexScalarQuantizer(
            dim, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
        )
        trained.train(np.ascontiguousarray(matrix))
        self.shards: list[Any] = []
        self.error = np.zeros(dim, dtype=np.float64)
        for lo, hi in self.bounds:
            shard = faiss.clone_index(trained)
            for start in range(lo, hi, DECODE_CHUNK):
                block = np.ascontiguousarray(matrix[start : min(start + DECODE_CHUNK, hi)])
                shard.add(block)
                decoded = shard.sa_decode(shard.sa_encode(block))
                np.maximum(self.error, np.abs(block - decoded).max(axis=0), out=self.error)
            self.shards.append(shard)
        self._pool = ThreadPoolExecutor(len(self.shards)) if len(self.shards) > 1 else None
        self.fallbacks = 0  # queries answered by the exact scan because the bound did not hold
        self.searches = 0
        self._count = threading.Lock()

    @property
    def nbytes(self) -> int:
        """Bytes the first pass reads per query (the codes)."""
        return int(self.matrix.shape[0] * self.matrix.shape[1])

    def search(
        self,
        query: np.ndarray,
        mask: np.ndarray,
        depth: int,
        exact: Callable[[np.ndarray, np.ndarray, int], Hits],
    ) -> Hits:
        """The exact scan's top `depth` eligible rows (row, float32 cosine), ties by row; `exact`
        (the exact scan) answers when the candidates cannot be certified."""
        import faiss

        q = np.ascontiguousarray(query, dtype=np.float32)
        take = depth * self.rescore_factor
        bits = np.packbits(np.asarray(mask, dtype=bool), bitorder="little")

        def scan(shard_no: int) -> tuple[np.ndarray, np.ndarray, bool]:
            lo, hi = self.bounds[shard_no]
            part = np.ascontiguousarray(bits[lo // 8 : -(-hi // 8)])
            selector = faiss.IDSelectorBitmap(hi - lo, faiss.swig_ptr(part))
            params = faiss.SearchParameters()
            params.sel = selector
            scores, rows = self.shards[shard_no].search(q[None, :], take, params=params)
            found = rows[0] >= 0
            # a shard that returned fewer than `take` rows returned all its eligible rows
            return rows[0][found] + lo, scores[0][found], bool(found.all())

        shards = range(len(self.shards))
        parts = list(self._pool.map(scan, shards)) if self._pool else [scan(0)]
        candidates = np.concatenate([p[0] for p in parts]).astype(np.int64)
        cut = max((float(p[1][-1]) for p in parts if p[2] and p[1].size), default=-np.inf)
        with self._count:
            self.searches += 1
        if candidates.size == 0:
            return []
        exact_scores = self.matrix[candidates] @ q
        order = np.lexsort((candidates, -exact_scores))[:depth]
        if order.size == depth and cut > -np.inf:
            bound = float(np.abs(q).astype(np.float64) @ self.error) + MARGIN
            if not cut + bound < float(exact_scores[order[-1]]):
                with self._count:
                    self.fallbacks += 1
                return exact(query, mask, depth)
        return [(int(candidates[i]), float(exact_scores[i])) for i in order]
