"""The sq8 scan (faiss SQ8 first pass + exact float32 rescoring) returns the exact scan's rows,
in the exact scan's order, under the same eligibility mask; the certificate falls back to the
exact scan when quantisation cannot separate the candidates (no timing asserted here)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mambomeme.bench import peers
from mambomeme.corpus.manifest import sha256_file, write_json_atomic
from mambomeme.errors import MamboMemeError
from mambomeme.index.dense import DenseFiles
from mambomeme.index.dense_index import DenseIndex
from mambomeme.index.dense_quantised import QuantisedScan, ScanConfig


def _index(tmp_path: Path, matrix: np.ndarray, scan: ScanConfig) -> DenseIndex:
    tmp_path.mkdir(parents=True, exist_ok=True)
    files = DenseFiles.in_dir(tmp_path)
    np.save(files.matrix, matrix, allow_pickle=False)
    ids = [f"id-{i:05d}" for i in range(matrix.shape[0])]
    write_json_atomic(files.ids, ids)
    write_json_atomic(files.manifest, {"matrix_sha256": sha256_file(files.matrix)})
    return DenseIndex(files, ids, scan=scan)


def _brute_force(matrix: np.ndarray, query: np.ndarray, mask: np.ndarray, k: int) -> list[int]:
    scores = matrix.astype(np.float64) @ query.astype(np.float64)
    rows = [r for r in range(matrix.shape[0]) if mask[r]]
    return sorted(rows, key=lambda r: (-scores[r], r))[:k]


@pytest.mark.parametrize(("rows", "threads"), [(1, 0), (7, 2), (500, 1), (5000, 2), (5003, 3)])
def test_sq8_returns_the_exact_rows_in_order(tmp_path: Path, rows: int, threads: int) -> None:
    matrix = peers.synthetic_matrix(rows, 32, seed=rows)
    exact = _index(tmp_path / "exact", matrix, ScanConfig())
    sq8 = _index(tmp_path / "sq8", matrix, ScanConfig("sq8", 4, threads))
    assert sq8.quantised is not None and exact.quantised is None
    rng = np.random.default_rng(11)
    for trial in range(8):
        query = peers.synthetic_matrix(1, 32, seed=200 + trial)[0]
        for mask in (np.ones(rows, dtype=bool), rng.random(rows) < 0.3, rng.random(rows) < 0.01):
            for depth in (1, 10, 100):
                want = exact.search(query, mask, depth)
                got = sq8.search(query, mask, depth)
                assert [r for r, _ in got] == [r for r, _ in want]
                assert [r for r, _ in got] == _brute_force(matrix, query, mask, depth)
                assert all(mask[r] for r, _ in got)
                assert np.allclose([s for _, s in got], [s for _, s in want], atol=1e-6)


def test_sq8_with_nothing_eligible_returns_nothing(tmp_path: Path) -> None:
    matrix = peers.synthetic_matrix(300, 16, seed=1)
    sq8 = _index(tmp_path, matrix, ScanConfig("sq8", 4, 2))
    assert sq8.search(matrix[0], np.zeros(300, dtype=bool), 10) == []


def test_sq8_ties_break_by_row(tmp_path: Path) -> None:
    matrix = np.zeros((2048, 4), dtype=np.float32)
    matrix[:, 0] = 1.0  # every row has the same cosine: only the row order decides
    sq8 = _index(tmp_path, matrix, ScanConfig("sq8", 1, 2))
    query = np.array([1, 0, 0, 0], dtype=np.float32)
    mask = np.ones(2048, dtype=bool)
    mask[[0, 5]] = False
    assert [r for r, _ in sq8.search(query, mask, 3)] == [1, 2, 3]


def test_uncertified_candidates_fall_back_to_the_exact_scan() -> None:
    """Rows closer together than the quantisation step: the first pass cannot order them, the
    bound says so, and the exact scan answers."""
    rng = np.random.default_rng(5)
    base = peers.synthetic_matrix(1, 32, seed=9)[0]
    matrix = base + rng.standard_normal((4096, 32), dtype=np.float32) * 1e-4
    matrix[:, 0] += np.linspace(-1, 1, 4096, dtype=np.float32)  # a wide range per dimension
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    scan = QuantisedScan(matrix, rescore_factor=1, threads=2)
    calls: list[int] = []

    def exact(query: np.ndarray, mask: np.ndarray, depth: int) -> list[tuple[int, float]]:
        calls.append(depth)
        return [(r, 0.0) for r in _brute_force(matrix, query, mask, depth)]

    query = matrix[2000].copy()
    query[0] = 0.0
    query /= np.linalg.norm(query)
    mask = np.ones(4096, dtype=bool)
    got = scan.search(query, mask, 50, exact)
    assert calls == [50] and scan.fallbacks == 1
    assert [r for r, _ in got] == _brute_force(matrix, query, mask, 50)


def test_scan_params_are_checked() -> None:
    assert ScanConfig.from_params({}) == ScanConfig("exact", 4, 0)
    assert ScanConfig.from_params({"scan": "sq8", "rescore_factor": 8}).rescore_factor == 8
    with pytest.raises(MamboMemeError, match="dense.scan"):
        ScanConfig.from_params({"scan": "int4"})
    with pytest.raises(MamboMemeError, match="dense.rescore_factor"):
        ScanConfig.from_params({"scan": "sq8", "rescore_factor": 0})


@pytest.mark.slow
def test_engine_dense_route_is_unchanged_with_sq8(
    fixture_build: Path, params: dict[str, Any]
) -> None:
    from mambomeme.search.engine import Engine

    quantised = copy.deepcopy(params)
    quantised["dense"]["scan"] = "sq8"
    exact = Engine.open(fixture_build, params)
    sq8 = Engine.open(fixture_build, quantised)
    assert sq8.config.dense_scan.kind == "sq8" and exact.config.dense_scan.kind == "exact"
    for query in ("john cena", "pretending to be invisible", "cat on a keyboard", "zzz"):
        want = exact.search([query], system="dense", limit=20)
        got = sq8.search([query], system="dense", limit=20)
        assert [r.item_id for r in got.results] == [r.item_id for r in want.results]


def test_bench_comparison_reports_full_agreement_for_sq8() -> None:
    from mambomeme.bench import dense_scan

    matrix = peers.synthetic_matrix(3000, 32, seed=21)
    vectors = peers.synthetic_matrix(20, 32, seed=22)
    mask = np.random.default_rng(3).random(3000) < 0.8
    report = dense_scan.compare(matrix, vectors, mask, depth=20, warmup=2, threads=2)
    ours = report["agreement"]["ours_sq8_rescored_masked"]
    assert ours["top10_identical_sets"] == ours["rank_equal"] == ours["recall_at_10"] == 1.0
    assert ours["queries"] == 20
    assert set(report["latency_ms"]) == {
        "ours_exact_masked",
        "ours_sq8_rescored_masked",
        "faiss_sq8",
        "faiss_hnsw",
    }
    assert 0.0 <= report["agreement"]["faiss_hnsw"]["recall_at_10"] <= 1.0
