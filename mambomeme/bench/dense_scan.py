"""The dense scans side by side: our exact float32 scan, our sq8 scan (quantised first pass +
exact rescoring, index/dense_quantised.py), faiss `IndexScalarQuantizer` (SQ8) and faiss
`IndexHNSWFlat`, on one matrix and one set of query vectors, in one process.

Agreement is measured against our exact scan: top-10 set identity, top-`depth` rank equality
(same rows in the same order) and recall@10. Ours runs under the eligibility mask (the exact scan
under the same mask is the reference); the faiss peers have no mask, so they are compared with
the exact scan over all rows. Latency: p50/p95 over the queries after `warmup` untimed calls.
No timing is asserted anywhere; `scripts/bench_dense_scan.py` prints the figures.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from mambomeme.bench.timing import percentiles, timed
from mambomeme.index.dense_quantised import QuantisedScan

Hits = list[tuple[int, float]]
HNSW_M = 32  # graph degree of the HNSW peer
HNSW_EF_CONSTRUCTION = 80
HNSW_EF_SEARCH = 128


class FaissSQ8Peer:
    """faiss IndexScalarQuantizer QT_8bit, inner product: what a user would take off the shelf."""

    def __init__(self, matrix: np.ndarray) -> None:
        import faiss

        self._index: Any = faiss.IndexScalarQuantizer(
            matrix.shape[1], faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
        )
        self._index.train(np.ascontiguousarray(matrix))
        self._index.add(np.ascontiguousarray(matrix))

    def search(self, query: np.ndarray, depth: int) -> Hits:
        scores, rows = self._index.search(query[None, :].astype(np.float32), depth)
        return [(int(r), float(s)) for r, s in zip(rows[0], scores[0], strict=True) if r >= 0]


class FaissHNSWPeer:
    """faiss IndexHNSWFlat (float32 vectors, inner product), M=HNSW_M, efSearch=HNSW_EF_SEARCH."""

    def __init__(self, matrix: np.ndarray) -> None:
        import faiss

        self._index: Any = faiss.IndexHNSWFlat(matrix.shape[1], HNSW_M, faiss.METRIC_INNER_PRODUCT)
        self._index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
        self._index.add(np.ascontiguousarray(matrix))
        self._index.hnsw.efSearch = HNSW_EF_SEARCH

    def search(self, query: np.ndarray, depth: int) -> Hits:
        scores, rows = self._index.search(query[None, :].astype(np.float32), depth)
        return [(int(r), float(s)) for r, s in zip(rows[0], scores[0], strict=True) if r >= 0]


def agreement(
    reference: list[Hits], got: list[Hits], matrix: np.ndarray, vectors: np.ndarray
) -> dict[str, float]:
    """Top-10 set identity, rank equality over the whole list, recall@10, tie-aware recall@10
    (a returned row counts when its exact score reaches the exact 10th score: rows with equal
    vectors are interchangeable) and the largest score difference on rows both return."""
    sets = ranks = 0
    recall = tied = 0.0
    worst = 0.0
    for want, have, vector in zip(reference, got, vectors, strict=True):
        want10 = {r for r, _ in want[:10]}
        have10 = {r for r, _ in have[:10]}
        sets += want10 == have10
        ranks += [r for r, _ in want] == [r for r, _ in have]
        recall += len(want10 & have10) / max(1, len(want10))
        if want[:10]:
            rows = np.array([r for r, _ in have[:10]], dtype=np.int64)
            exact = matrix[rows] @ vector if rows.size else np.zeros(0, dtype=np.float32)
            tenth = want[:10][-1][1]
            tied += float((exact >= tenth - 1e-6).sum()) / len(want[:10])
        scores = dict(want)
        diffs = [abs(scores[r] - s) for r, s in have if r in scores]
        worst = max([worst, *diffs])
    n = max(1, len(reference))
    return {
        "queries": len(reference),
        "top10_identical_sets": round(sets / n, 6),
        "rank_equal": round(ranks / n, 6),
        "recall_at_10": round(recall / n, 6),
        "recall_at_10_tie_aware": round(tied / n, 6),
        "max_abs_score_difference": worst,
    }


def compare(
    matrix: np.ndarray,
    vectors: np.ndarray,
    mask: np.ndarray,
    depth: int,
    warmup: int,
    rescore_factor: int = 4,
    threads: int = 0,
    exact: Callable[[np.ndarray, np.ndarray, int], Hits] | None = None,
    log: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Every scan's latency and agreement on `vectors` (one row per query)."""
    from mambomeme.index.dense_index import exact_top

    def exact_scan(query: np.ndarray, rows_mask: np.ndarray, k: int) -> Hits:
        return exact_top(matrix, query, rows_mask, k)

    exact = exact or exact_scan
    queries = list(vectors)
    all_rows = np.ones(matrix.shape[0], dtype=bool)
    report: dict[str, Any] = {
        "shape": list(matrix.shape),
        "depth": depth,
        "eligible": int(mask.sum()),
    }
    started = time.perf_counter()
    ours = QuantisedScan(matrix, rescore_factor, threads)
    report["sq8_rescored_build_s"] = round(time.perf_counter() - started, 3)
    report["sq8_rescored_settings"] = {"rescore_factor": rescore_factor, "shards": len(ours.bounds)}
    log("faiss SQ8 and HNSW peers: building")
    started = time.perf_counter()
    sq8 = FaissSQ8Peer(matrix)
    report["faiss_sq8_build_s"] = round(time.perf_counter() - started, 3)
    started = time.perf_counter()
    hnsw = FaissHNSWPeer(matrix)
    report["faiss_hnsw_build_s"] = round(time.perf_counter() - started, 3)
    report["faiss_hnsw_settings"] = {
        "M": HNSW_M,
        "efConstruction": HNSW_EF_CONSTRUCTION,
        "efSearch": HNSW_EF_SEARCH,
    }
    log("latency: exact, sq8 + rescoring, faiss SQ8, faiss HNSW")
    report["latency_ms"] = {
        "ours_exact_masked": percentiles(timed(lambda v: exact(v, mask, depth), queries, warmup)),
        "ours_sq8_rescored_masked": percentiles(
            timed(lambda v: ours.search(v, mask, depth, exact), queries, warmup)
        ),
        "faiss_sq8": percentiles(timed(lambda v: sq8.search(v, depth), queries, warmup)),
        "faiss_hnsw": percentiles(timed(lambda v: hnsw.search(v, depth), queries, warmup)),
    }
    log("agreement with the exact scan")
    fallbacks = ours.fallbacks
    masked = [exact(v, mask, depth) for v in queries]
    unmasked = [exact(v, all_rows, depth) for v in queries]
    report["agreement"] = {
        "ours_sq8_rescored_masked": agreement(
            masked, [ours.search(v, mask, depth, exact) for v in queries], matrix, vectors
        ),
        "faiss_sq8": agreement(unmasked, [sq8.search(v, depth) for v in queries], matrix, vectors),
        "faiss_hnsw": agreement(
            unmasked, [hnsw.search(v, depth) for v in queries], matrix, vectors
        ),
    }
    report["agreement"]["ours_sq8_rescored_masked"]["exact_fallbacks"] = ours.fallbacks - fallbacks
    report["bytes_per_query"] = {
        "exact": int(matrix.nbytes),
        "sq8_first_pass": ours.nbytes,
    }
    return report
