"""Wall time of a whole `mambomeme search` process (start-up + open + one search), p50/p95,
cold (the engine opened in the process) and warm (answered by a `mambomeme serve` server).

    python scripts/bench_startup.py --build DIR [--systems bm25 hybrid] [--runs 20]
        [--query "john cena" --query ...] [--params params.yaml] [--modes cold warm]

Each run is a fresh `python -m mambomeme.cli search QUERY --system S --build DIR` (queries
cycled), timed from spawn to exit; one warm-up run per system and mode first (file cache; for
warm, the server opening the engine). Cold runs set MAMBOMEME_WARM=0; warm runs talk to a server
this script starts in a private runtime folder and stops at the end. Prints one line per system
and mode: runs, p50, p95, min, max in seconds. docs/library.md quotes it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


def timed_runs(
    args: argparse.Namespace, system: str, queries: list[str], env: dict[str, str]
) -> list[float]:
    times = []
    for number in range(args.runs + 1):
        command = [
            sys.executable, "-m", "mambomeme.cli", "search", queries[number % len(queries)],
            "--system", system, "--build", str(args.build), "--params", str(args.params),
        ]  # fmt: skip
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, env=env, cwd=ROOT, check=False)
        elapsed = time.perf_counter() - start
        if done.returncode not in (0, 1):
            raise SystemExit(done.stderr.decode("utf-8", "replace")[-2000:])
        if number:  # the first run only warms the file cache (and the server's engine)
            times.append(elapsed)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, required=True)
    parser.add_argument("--params", type=Path, default=ROOT / "params.yaml")
    parser.add_argument("--systems", nargs="+", default=["bm25", "hybrid"])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--query", action="append", default=[])
    parser.add_argument("--modes", nargs="+", choices=["cold", "warm"], default=["cold", "warm"])
    args = parser.parse_args()
    queries = args.query or ["john cena", "you can't see me", "cat on a keyboard"]  # ours
    runtime = tempfile.mkdtemp(prefix="mambomeme-bench-run-")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "MAMBOMEME_RUNTIME_DIR": runtime}  # fmt: skip
    print(f"{args.build}: {args.runs} runs per system and mode, queries {queries}")
    server = None
    if "warm" in args.modes:
        serve = [sys.executable, "-m", "mambomeme.cli", "serve", "--idle", "600"]
        server = subprocess.Popen(serve, env={**env, "MAMBOMEME_WARM": "1"}, cwd=ROOT)
    try:
        for system in args.systems:
            for mode in args.modes:
                warm = "1" if mode == "warm" else "0"
                times = timed_runs(args, system, queries, {**env, "MAMBOMEME_WARM": warm})
                print(
                    f"  {system:<10} {mode:<5} runs {len(times)}  "
                    f"p50 {statistics.median(times):.3f} s  p95 {percentile(times, 95):.3f} s  "
                    f"min {min(times):.3f}  max {max(times):.3f}"
                )
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        shutil.rmtree(runtime, ignore_errors=True)


if __name__ == "__main__":
    main()
