"""Dense scans side by side (issue 36, point 1): exact float32, sq8 + exact rescoring, faiss SQ8,
faiss HNSWFlat; latency and agreement with the exact scan, on a real matrix and on a synthetic
memes-full-sized one.

    python scripts/bench_dense_scan.py --build build/memes-10k [--queries 1000] [--warmup 50]
        [--synthetic-rows 377987] [--noise 0.02] [--out reports/dense-scan.json]

Queries: every distinct text and cue of the dev benchmarks under benchmarks/, encoded by the
build's ONNX query encoder (real query encodings), topped up to --queries with item vectors plus
Gaussian noise (sigma --noise, then L2-normalised; seeded); the report says how many of each.
Mask: the build's eligibility mask (engine default filters). The synthetic matrix is the real
matrix tiled to --synthetic-rows rows, each copy plus Gaussian noise (sigma --noise) and
re-normalised, its mask tiled the same way: every figure on it is labelled synthetic.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mambomeme.bench import dense_scan, floor  # noqa: E402
from mambomeme.config import load_params  # noqa: E402
from mambomeme.index.query_encoder import QUERY_ENCODER_DIR, OnnxQueryEncoder  # noqa: E402
from mambomeme.search.engine import Engine  # noqa: E402


def query_texts(benchmarks: Path) -> list[str]:
    """Distinct texts and cues of the dev benchmarks, in file order."""
    from mambomeme.bench.engine_bench import dev_benchmarks

    seen: dict[str, None] = {}
    for folder in dev_benchmarks(benchmarks):
        for line in (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                for text in [record["text"], *record.get("cues", [])]:
                    seen.setdefault(str(text), None)
    return list(seen)


def noisy(rows: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    out = rows + rng.standard_normal(rows.shape, dtype=np.float32) * np.float32(sigma)
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out.astype(np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, required=True)
    parser.add_argument("--params", type=Path, default=ROOT / "params.yaml")
    parser.add_argument("--benchmarks", type=Path, default=ROOT / "benchmarks")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--synthetic-rows", type=int, default=0)
    parser.add_argument("--noise", type=float, default=0.02)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    params = load_params(args.params)
    rng = np.random.default_rng(args.seed)
    engine = Engine.open(args.build, params)
    mask = engine.items.mask(None)
    matrix = np.load(args.build / "dense" / "dense.npy", allow_pickle=False)
    texts = query_texts(args.benchmarks)[: args.queries]
    encoder = OnnxQueryEncoder(args.build / QUERY_ENCODER_DIR, threads=0)
    real = encoder.encode(texts, batch_size=64)
    extra = max(0, args.queries - len(real))
    picked = matrix[rng.choice(matrix.shape[0], extra, replace=extra > matrix.shape[0])]
    vectors = np.concatenate([real, noisy(picked, args.noise, rng)])
    report: dict[str, Any] = {
        "machine": floor.machine(),
        "queries": {"real_encodings": len(real), "item_vectors_plus_noise": extra},
        "noise_sigma": args.noise,
        "settings": {"warmup": args.warmup, "depth": args.depth, "seed": args.seed},
    }

    def log(message: str) -> None:
        print(f"  .. {message}", file=sys.stderr, flush=True)

    runs = [("real", matrix, mask)]
    if args.synthetic_rows:
        copies = -(-args.synthetic_rows // matrix.shape[0])
        tiled = np.concatenate([noisy(matrix, args.noise, rng) for _ in range(copies)])
        tiled_mask = np.tile(mask, copies)
        runs.append(("synthetic", tiled[: args.synthetic_rows], tiled_mask))
    for label, rows, rows_mask in runs:
        print(f"{label} matrix {rows.shape}", flush=True)
        result = dense_scan.compare(
            np.ascontiguousarray(rows), vectors, rows_mask[: rows.shape[0]], args.depth,
            args.warmup, int(params["dense"].get("rescore_factor", 4)), log=log,
        )  # fmt: skip
        result["synthetic"] = label == "synthetic"
        report[label] = result
        for name, figures in result["latency_ms"].items():
            print(f"  {name:<26} p50 {figures['p50']:7.2f}  p95 {figures['p95']:7.2f} ms")
        for name, figures in result["agreement"].items():
            print(f"  {name:<26} {figures}")
        print(
            f"  builds: sq8+rescore {result['sq8_rescored_build_s']} s, faiss SQ8 "
            f"{result['faiss_sq8_build_s']} s, HNSW {result['faiss_hnsw_build_s']} s"
        )
    report["machine"]["load_average_end"] = floor.machine()["load_average_1_5_15"]
    print(f"load average start {report['machine']['load_average_1_5_15']} end "
          f"{report['machine']['load_average_end']}")  # fmt: skip
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
