"""DVC stage run_shipped: the shipped system (the frozen selection of the tune stage, with its
abstention model, mambomeme/search/shipped.py) over the scored benchmark, as the run `shipped`.

What `mambomeme search` and the TUI serve by default is exactly what this run measures.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run, stage_params  # noqa: E402

from mambomeme.config import build_dir, scored_benchmark_dir  # noqa: E402
from mambomeme.evaluation.benchmark import load_benchmark  # noqa: E402
from mambomeme.evaluation.evaluate import execute_run, find_corpus_manifest  # noqa: E402
from mambomeme.search.shipped import shipped  # noqa: E402


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    params = stage_params(__doc__.splitlines()[0])
    benchmark = load_benchmark(scored_benchmark_dir(params))
    build = build_dir(params)
    ship = shipped(params, build, Path(params["base"]["reports"]))
    from mambomeme.search.engine import Engine

    engine = Engine.open(build, ship.params)
    out = Path("runs-shipped") / str(params["base"]["corpus"]) / "shipped.trec"
    out.parent.mkdir(parents=True, exist_ok=True)
    result = execute_run(
        engine, benchmark, ship.system, out, build, find_corpus_manifest(build, None),
        ship.params, force=True, label="shipped",
    )  # fmt: skip
    print(f"run shipped ({ship.system}, {ship.source}): {len(result.errors)} errors")


if __name__ == "__main__":
    run(main)
