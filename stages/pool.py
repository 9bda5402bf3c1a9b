"""DVC stage pool: every system's top 10 (+ gold, hard negatives, earlier rounds) -> blind files.

    python stages/pool.py [BENCHMARK_DIR POOL_DIR] [--judgements DIR] [--build DIR]

Defaults from params.yaml: BENCHMARK_DIR = evaluation.benchmark, POOL_DIR =
pools/<evaluation.benchmark_name>, --judgements judgements/<evaluation.benchmark_name>, --build
build/<base.corpus>. Reads BENCHMARK_DIR/queries.jsonl and pool.yaml. Writes POOL_DIR/pool.jsonl
(every candidate, marked judged or not), manifest.json (how many are new: `to_annotate`) and
POOL_DIR/<annotator>/ with only the pairs not every annotator's file already grades. Refuses an
existing POOL_DIR (dvc removes it, as the stage's output, before rerunning).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run  # noqa: E402

from mambomeme.config import DEFAULT_PARAMS, load_params  # noqa: E402
from mambomeme.evaluation.annotation_workflow import pool_benchmark, pool_summary  # noqa: E402


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    params = load_params(DEFAULT_PARAMS)
    name = str(params["evaluation"]["benchmark_name"])
    parser = argparse.ArgumentParser(description=__doc__)
    default_benchmark = Path(params["evaluation"]["benchmark"])
    parser.add_argument("benchmark", type=Path, nargs="?", default=default_benchmark)
    parser.add_argument("out", type=Path, nargs="?", default=Path("pools") / name)
    parser.add_argument("--judgements", type=Path, default=Path("judgements") / name)
    parser.add_argument("--judged", type=Path)
    parser.add_argument("--build", type=Path)
    args = parser.parse_args()
    manifest = pool_benchmark(
        args.benchmark, args.out, params, args.build, None, args.judged, args.judgements
    )
    print(pool_summary(args.out, manifest))


if __name__ == "__main__":
    run(main)
