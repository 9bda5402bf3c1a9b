"""The cost curve for docs/scaling.md: exact dense search and the lexical route vs corpus size.

    python scripts/bench_scaling.py [--sizes 1000,10000,100000,377988] [--queries 200]
        [--lexical-build build/memes-full] [--out reports/scaling.json]

Dense: for each size a random L2-normalised float32 matrix (SYNTHETIC: exact-search cost does
not depend on the values), our DenseIndex.search, sentence-transformers util.semantic_search
and faiss IndexFlatIP, and the floor = matrix bytes / measured read bandwidth.
Lexical (when --lexical-build is given): FTS5 indexes and their term lists built over the first
n items of that build (n <= its size), our lexical route vs bm25s over the dev benchmark texts.
Prints one row per (size, method) and writes the JSON. Timings only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mambomeme.bench import engine_bench, floor, peers  # noqa: E402
from mambomeme.config import load_params  # noqa: E402
from mambomeme.corpus.manifest import sha256_file, write_json_atomic  # noqa: E402
from mambomeme.index.dense import DenseFiles  # noqa: E402
from mambomeme.index.dense_index import DenseIndex  # noqa: E402


def dense_curve(
    sizes: list[int], queries: int, depth: int, seed: int, scratch: Path, bandwidth: floor.Bandwidth
) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    vectors = list(peers.synthetic_matrix(queries, engine_bench.DIMENSION, seed + 1))
    for size in sizes:
        matrix = peers.synthetic_matrix(size, engine_bench.DIMENSION, seed)
        files = DenseFiles.in_dir(scratch / f"dense-{size}")
        files.matrix.parent.mkdir(parents=True)
        np.save(files.matrix, matrix, allow_pickle=False)
        ids = [str(i) for i in range(size)]
        write_json_atomic(files.ids, ids)
        write_json_atomic(files.manifest, {"matrix_sha256": sha256_file(files.matrix)})
        ours = DenseIndex(files, ids)
        mask = np.ones(size, dtype=bool)
        st, fa = peers.SemanticSearchPeer(ours.matrix), peers.FaissFlatPeer(ours.matrix)
        warm = min(20, queries)
        methods: list[tuple[str, Callable[[np.ndarray], object]]] = [
            ("ours_exact", partial(ours.search, mask=mask, depth=depth)),
            ("st_semantic_search", partial(st.search, depth=depth)),
            ("faiss_flat_ip", partial(fa.search, depth=depth)),
        ]
        for name, fn in methods:
            stats = engine_bench.percentiles(engine_bench.timed(fn, vectors, warm))
            rows.append(
                {
                    "route": "dense",
                    "size": size,
                    "method": name,
                    **stats,
                    "floor_ms": round(floor.floor_ms(matrix.nbytes, bandwidth), 3),
                    "synthetic": True,
                }
            )
        del ours, st, fa, matrix, methods
        files.matrix.unlink()
    return rows


def lexical_curve(
    build: Path,
    sizes: list[int],
    queries: int,
    depth: int,
    seed: int,
    weights: dict[str, float],
    scratch: Path,
) -> list[dict[str, object]]:
    from mambomeme.corpus.ingest import load_items
    from mambomeme.index import fts_query
    from mambomeme.index.lexical import LexicalIndex, build_lexical
    from mambomeme.index.term_lists import build_term_lists

    items = load_items(build)
    texts = engine_bench.load_queries(ROOT / "benchmarks", queries, seed)
    tokens = [t for t in (fts_query.tokenize(q) for q in texts) if t]
    rows: list[dict[str, object]] = []
    for size in [s for s in sizes if s <= len(items)]:
        subset = items[:size]
        path = scratch / f"lexical-{size}.sqlite"
        start = time.perf_counter()
        build_lexical(subset, path, weights)
        build_s = time.perf_counter() - start
        lists = scratch / f"term-lists-{size}"
        start = time.perf_counter()
        build_term_lists(path, lists, progress=False)
        terms_s = time.perf_counter() - start
        index = LexicalIndex(path, 0, lists)  # as the engine opens it: precomputed term lists
        bm25s = peers.Bm25sPeer.from_items(subset)
        mask = np.array([item.eligible for item in subset], dtype=bool)
        warm = min(20, len(tokens))
        routes: list[tuple[str, Callable[[list[str]], object]]] = [
            ("ours_fts5_route", partial(engine_bench.lexical_route, index, mask=mask, depth=depth)),
            ("bm25s", partial(bm25s.search, mask=mask, depth=depth)),
        ]
        for name, fn in routes:
            stats = engine_bench.percentiles(engine_bench.timed(fn, tokens, warm))
            rows.append(
                {
                    "route": "lexical",
                    "size": size,
                    "method": name,
                    **stats,
                    "fts5_build_s": round(build_s, 2),
                    "term_lists_build_s": round(terms_s, 2),
                    "index_bytes": path.stat().st_size,
                }
            )
        index.close()
        path.unlink()
        shutil.rmtree(lists)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000,377988")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--lexical-build", type=Path, help="a build dir whose items are subset")
    parser.add_argument("--params", type=Path, default=ROOT / "params.yaml")
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "scaling.json")
    args = parser.parse_args()
    params = load_params(args.params)
    sizes = [int(s) for s in args.sizes.split(",")]
    seed, depth = int(params["base"]["seed"]), int(params["search"]["depth"])
    bandwidth = floor.measure_bandwidth()
    with tempfile.TemporaryDirectory(prefix="mambomeme-scaling-") as tmp:
        rows = dense_curve(sizes, args.queries, depth, seed, Path(tmp), bandwidth)
        if args.lexical_build:
            rows += lexical_curve(
                args.lexical_build,
                sizes,
                args.queries,
                depth,
                seed,
                params["lexical"]["weights"],
                Path(tmp),
            )
    report = {
        "machine": floor.machine(),
        "versions": floor.versions(),
        "bandwidth": bandwidth._asdict(),
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"bandwidth {bandwidth.best_gb_s} GB/s; load {report['machine']['load_average_1_5_15']}")
    print(f"{'route':<8} {'size':>7} {'method':<20} {'p50 ms':>9} {'p95 ms':>9} {'floor ms':>9}")
    for r in rows:
        print(
            f"{r['route']:<8} {r['size']:>7} {r['method']:<20} {r['p50']:>9.2f} {r['p95']:>9.2f} "
            f"{r.get('floor_ms', ''):>9}"
        )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
