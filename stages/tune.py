"""DVC stage tune: grid-search the hybrid's search params on the dev benchmark -> selection.json.

Objective: Q, the macro-slice mean nDCG@10 of the `hybrid` system on the dev partition. The
protocol check (dev only) runs before the benchmark's queries or qrels are read.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run  # noqa: E402

from mambomeme.config import corpus_config, load_params  # noqa: E402
from mambomeme.errors import TuningError  # noqa: E402
from mambomeme.evaluation.benchmark import load_benchmark  # noqa: E402
from mambomeme.evaluation.runner import run_benchmark  # noqa: E402
from mambomeme.evaluation.score import OutcomeTable, aggregate, evaluate_run  # noqa: E402
from mambomeme.evaluation.tuning import search_params, tune  # noqa: E402
from mambomeme.release.protocol import check_tuning_allowed, read_benchmark_meta  # noqa: E402
from mambomeme.search.engine import Engine, EngineConfig  # noqa: E402


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    params = load_params()
    corpus, _ = corpus_config(params)
    settings = params["tuning"]
    bench_dir = Path(settings["benchmark"])
    check_tuning_allowed(read_benchmark_meta(bench_dir))  # before any query or qrel is read
    benchmark = load_benchmark(bench_dir)
    engine = Engine.open(Path("build") / corpus, params)
    system = str(settings.get("system", "hybrid"))

    def evaluate(config: dict[str, Any]) -> float:
        # one engine for every point: indexes and model load once, only the config changes
        searched = {**params, "search": search_params(params["search"], config)}
        engine.config = EngineConfig.from_params(searched)
        found = run_benchmark(benchmark, lambda c, f: engine.search(c, 10, f, system), system)
        q = aggregate(OutcomeTable.of(evaluate_run(benchmark, found))).Q
        if q is None:
            raise TuningError(f"{bench_dir}: no answerable query in any primary slice")
        print(f"  Q={q:.4f} {config}", flush=True)
        return q

    grid = {**settings, "defaults": search_params_defaults(params["search"], settings["axes"])}
    selection = tune(bench_dir, evaluate, grid, out=Path("selection.json"), overwrite=True)
    print(
        f"tune {corpus}: {len(selection.curve)} points, best Q={selection.objective:.4f} "
        f"at {dict(selection.config)}"
    )


def search_params_defaults(search: dict[str, Any], axes: dict[str, Any]) -> dict[str, Any]:
    """The params.yaml value of each dotted axis key (the tie-break's 'default-like' anchor)."""
    defaults: dict[str, Any] = {}
    for dotted in axes:
        node: Any = search
        for part in dotted.split("."):
            node = node.get(part, 0.0) if isinstance(node, dict) else 0.0
        defaults[dotted] = node
    return defaults


if __name__ == "__main__":
    run(main)
