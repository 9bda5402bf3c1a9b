"""DVC stage run_systems: every system of params evaluation.systems over the scored benchmark
(<base.reports>/benchmark/, the adjudicate stage's output: queries + the frozen judgement set).

Writes runs/<benchmark name>/<system>.trec with its .errors/.latency/.details/.meta sidecars,
replacing only files inside that DVC-owned folder.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run, stage_params  # noqa: E402

from mambomeme.config import (  # noqa: E402
    build_dir,
    evaluation_systems,
    scored_benchmark_dir,
)
from mambomeme.evaluation.benchmark import load_benchmark  # noqa: E402
from mambomeme.evaluation.evaluate import execute_run, find_corpus_manifest  # noqa: E402


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    params = stage_params(__doc__.splitlines()[0])
    benchmark = load_benchmark(scored_benchmark_dir(params))  # the adjudicated judgement set
    build = build_dir(params)
    manifest = find_corpus_manifest(build, None)
    out_dir = Path("runs") / str(params["base"]["corpus"])
    from mambomeme.search.engine import Engine

    engine = Engine.open(build, params)
    for system in evaluation_systems(params):
        result = execute_run(
            engine,
            benchmark,
            system,
            out_dir / f"{system}.trec",
            build,
            manifest,
            params,
            force=True,
        )
        p95 = sorted(result.latency_ms.values())[int(0.95 * (len(result.latency_ms) - 1))]
        print(
            f"run {system}: {len(benchmark.queries)} queries, {len(result.errors)} errors, "
            f"p95 ~{p95:.1f} ms"
        )


if __name__ == "__main__":
    run(main)
