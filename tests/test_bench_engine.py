"""Correctness of the benchmark's pieces (no timing is asserted anywhere): our exact dense top-k
equals brute force and faiss, the bm25s peer honours the mask, percentiles, query loading."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mambomeme.bench import engine_bench, floor, peers
from mambomeme.corpus.manifest import sha256_file, write_json_atomic
from mambomeme.index.dense import DenseFiles
from mambomeme.index.dense_index import DenseIndex


def _dense_index(tmp_path: Path, matrix: np.ndarray) -> DenseIndex:
    files = DenseFiles.in_dir(tmp_path)
    np.save(files.matrix, matrix, allow_pickle=False)
    ids = [f"id-{i:05d}" for i in range(matrix.shape[0])]
    write_json_atomic(files.ids, ids)
    write_json_atomic(files.manifest, {"matrix_sha256": sha256_file(files.matrix)})
    return DenseIndex(files, ids)


def _brute_force(matrix: np.ndarray, query: np.ndarray, mask: np.ndarray, k: int) -> list[int]:
    scores = matrix.astype(np.float64) @ query.astype(np.float64)
    rows = [r for r in range(matrix.shape[0]) if mask[r]]
    return sorted(rows, key=lambda r: (-scores[r], r))[:k]


@pytest.mark.parametrize("rows", [1, 7, 500, 3000])
def test_dense_top_k_equals_brute_force_and_faiss(tmp_path: Path, rows: int) -> None:
    matrix = peers.synthetic_matrix(rows, 32, seed=rows)
    index = _dense_index(tmp_path, matrix)
    faiss = peers.FaissFlatPeer(matrix)
    rng = np.random.default_rng(7)
    for trial in range(5):
        query = peers.synthetic_matrix(1, 32, seed=100 + trial)[0]
        everything = np.ones(rows, dtype=bool)
        ours = [r for r, _ in index.search(query, everything, 100)]
        assert ours == _brute_force(matrix, query, everything, 100)
        assert ours == [r for r, _ in faiss.search(query, min(100, rows))]
        mask = rng.random(rows) < 0.3
        masked = [r for r, _ in index.search(query, mask, 10)]
        assert masked == _brute_force(matrix, query, mask, 10)


def test_dense_ties_break_by_row(tmp_path: Path) -> None:
    matrix = np.zeros((6, 4), dtype=np.float32)
    matrix[:, 0] = 1.0  # every row has the same cosine
    index = _dense_index(tmp_path, matrix)
    query = np.array([1, 0, 0, 0], dtype=np.float32)
    mask = np.array([True, False, True, True, True, True])
    assert [r for r, _ in index.search(query, mask, 3)] == [0, 2, 3]


def test_semantic_search_peer_agrees_with_faiss() -> None:
    matrix = peers.synthetic_matrix(400, 16, seed=3)
    query = peers.synthetic_matrix(1, 16, seed=4)[0]
    st = [r for r, _ in peers.SemanticSearchPeer(matrix).search(query, 20)]
    assert st == [r for r, _ in peers.FaissFlatPeer(matrix).search(query, 20)]


def test_bm25s_peer_honours_the_mask_and_drops_non_matches() -> None:
    corpus = [["john", "cena", "wrestler"], ["cat", "dog"], ["john", "dog"], ["john"]]
    peer = peers.Bm25sPeer(corpus)
    everything = np.ones(4, dtype=bool)
    assert {r for r, _ in peer.search(["john"], everything, 10)} == {0, 2, 3}
    assert [r for r, _ in peer.search(["john", "dog"], everything, 10)][0] == 2
    mask = np.array([True, True, False, True])
    assert {r for r, _ in peer.search(["john", "dog"], mask, 10)} == {0, 1, 3}
    assert peer.search(["unknown"], everything, 10) == []
    assert all(score > 0 for _, score in peer.search(["dog"], everything, 10))


def test_percentiles_are_nearest_rank() -> None:
    stats = engine_bench.percentiles([float(x) for x in range(1, 101)])
    assert (stats["p50"], stats["p95"], stats["max"], stats["n"]) == (50.0, 95.0, 100.0, 100)
    assert engine_bench.percentiles([3.0])["p95"] == 3.0


def test_floor_is_bytes_over_bandwidth() -> None:
    bandwidth = floor.Bandwidth(2.0, 4.0, 2, 8, {})
    assert floor.floor_ms(8_000_000, bandwidth) == pytest.approx(8_000_000 / 4e9 * 1000)


def _bench(root: Path, name: str, partition: str, texts: list[str]) -> None:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "benchmark.json").write_text(
        json.dumps({"partition": partition, "corpus": f"{name}@v1"})
    )
    (folder / "queries.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))


def test_queries_cycle_dev_benchmarks_only_and_shuffle_with_the_seed(tmp_path: Path) -> None:
    _bench(tmp_path, "fixture", "dev", ["john cena", "disaster girl"])
    _bench(tmp_path, "other", "hidden", ["never read"])
    first = engine_bench.load_queries(tmp_path, 9, seed=1)
    assert len(first) == 9 and sorted(set(first)) == ["disaster girl", "john cena"]
    assert first == engine_bench.load_queries(tmp_path, 9, seed=1)
    assert engine_bench.corpus_benchmark(tmp_path, "fixture") == tmp_path / "fixture"
    assert engine_bench.corpus_benchmark(tmp_path, "other") is None


def test_no_dev_queries_is_a_clear_error(tmp_path: Path) -> None:
    from mambomeme.errors import MamboMemeError

    with pytest.raises(MamboMemeError, match="no dev benchmark queries"):
        engine_bench.load_queries(tmp_path, 5, seed=1)


def test_lexical_route_matches_the_engine_bm25_route(lexical_engine: Any) -> None:
    from mambomeme.index import fts_query

    mask = lexical_engine.items.mask(None)
    for text in ("john cena", "you can't see me", "burning house girl"):
        rows = engine_bench.lexical_route(
            lexical_engine.lexical, fts_query.tokenize(text), mask, 100
        )
        response = lexical_engine.search([text], limit=100, system="bm25")
        ranked = {
            h.rank: lexical_engine.items.row_of[r.item_id]
            for r in response.results
            for h in r.hits
            if h.route == "lexical"
        }
        assert all(rows[rank - 1] == row for rank, row in ranked.items()), text
        assert all(mask[r] for r in rows)


def test_ratios_are_ours_over_theirs_at_each_percentile() -> None:
    from mambomeme.bench.engine_bench import ratios

    def p(p50: float, p95: float) -> dict[str, float]:
        return {"p50": p50, "p95": p95}

    report = {
        "lexical": {"ours_fts5_route": p(1.0, 4.0), "bm25s": p(2.0, 8.0)},
        "dense": {
            "ours_exact_masked": p(30.0, 36.0),
            "faiss_flat_ip": p(60.0, 72.0),
            "st_semantic_search": p(300.0, 360.0),
            "floor_ms": 24.0,
        },
        "encode": {"onnx": p(6.0, 8.0), "torch": p(12.0, 16.0)},
    }
    got = ratios(report)
    assert got["lexical_ours_over_bm25s"] == {"p50": 0.5, "p95": 0.5}
    assert got["dense_ours_over_floor"] == {"p50": 1.25, "p95": 1.5}
    assert got["dense_ours_over_faiss_flat_ip"] == {"p50": 0.5, "p95": 0.5}
    assert got["dense_st_over_floor"] == {"p50": 12.5, "p95": 15.0}
    assert got["encode_onnx_over_torch"] == {"p50": 0.5, "p95": 0.5}
