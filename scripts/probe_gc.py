"""How much of a hybrid search's tail is Python's cyclic GC? Times every collection, per
generation, during N hybrid searches (after warm-up calls), with or without gc.freeze() after
the warm-up (docs/scaling.md, issue 36 section 6).

    python scripts/probe_gc.py build/memes-10k memes-10k plain
    python scripts/probe_gc.py build/memes-10k memes-10k freeze
"""

from __future__ import annotations

import argparse
import gc
import time
from pathlib import Path
from typing import Any

import numpy as np

from mambomeme.bench.engine_bench import load_queries
from mambomeme.config import load_params
from mambomeme.search.engine import Engine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("build", type=Path)
    parser.add_argument("corpus")
    parser.add_argument("mode", choices=("plain", "freeze"))
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    args = parser.parse_args()

    engine = Engine.open(args.build, load_params(Path("params.yaml"), args.corpus))
    queries = load_queries(Path("benchmarks"), args.queries, 20261201)
    for query in queries[: args.warmup]:
        engine.search([query], limit=10, system="hybrid")
    if args.mode == "freeze":
        gc.collect()
        gc.freeze()

    pauses: dict[int, list[float]] = {0: [], 1: [], 2: []}
    started = [0.0]

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            pauses[int(info["generation"])].append((time.perf_counter() - started[0]) * 1000)

    gc.callbacks.append(on_gc)
    laps = []
    for query in queries:
        start = time.perf_counter()
        engine.search([query], limit=10, system="hybrid")
        laps.append((time.perf_counter() - start) * 1000)
    gc.callbacks.remove(on_gc)

    ms = np.array(laps)
    print(
        f"{args.mode}: {len(laps)} searches, p50 {np.percentile(ms, 50):.2f} ms, "
        f"p95 {np.percentile(ms, 95):.2f} ms, mean {ms.mean():.2f} ms; "
        f"{len(gc.get_objects())} objects tracked, {gc.get_freeze_count()} frozen"
    )
    for generation, times in pauses.items():
        if times:
            print(
                f"  generation {generation}: {len(times)} collections, total {sum(times):.1f} ms, "
                f"mean {np.mean(times):.3f} ms, max {max(times):.2f} ms"
            )


if __name__ == "__main__":
    main()
