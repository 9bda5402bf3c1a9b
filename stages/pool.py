"""DVC stage pool: every system's top 10 (+ gold, hard negatives, earlier rounds) -> blind files.

    python stages/pool.py [BENCHMARK_DIR POOL_DIR] [--judgements DIR] [--build DIR] [--corpus NAME]

Defaults from params.yaml, as corpus NAME's pipeline (default base.corpus) sees it: BENCHMARK_DIR
= evaluation.benchmark, POOL_DIR = pools/<evaluation.benchmark_name>, --judgements
judgements/<evaluation.benchmark_name>, --build build/<corpus>. Reads BENCHMARK_DIR/queries.jsonl
and pool.yaml. Writes POOL_DIR/pool.jsonl (every candidate, marked judged or not), manifest.json
(how many are new: `to_annotate`) and POOL_DIR/<annotator>/ with only the pairs not every
annotator's file already grades. Refuses an existing POOL_DIR (dvc removes it, as the stage's
output, before rerunning).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import add_corpus_argument, run  # noqa: E402

from mambomeme.config import DEFAULT_PARAMS, build_dir, load_params  # noqa: E402
from mambomeme.evaluation.annotation_workflow import pool_benchmark, pool_summary  # noqa: E402


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("benchmark", type=Path, nargs="?")
    parser.add_argument("out", type=Path, nargs="?")
    parser.add_argument("--judgements", type=Path)
    parser.add_argument("--judged", type=Path)
    parser.add_argument("--build", type=Path)
    add_corpus_argument(parser)
    args = parser.parse_args()
    params = load_params(DEFAULT_PARAMS, args.corpus)
    name = str(params["evaluation"]["benchmark_name"])
    benchmark = args.benchmark or Path(params["evaluation"]["benchmark"])
    out = args.out or Path("pools") / name
    judgements = args.judgements or Path("judgements") / name
    build = args.build or build_dir(params)
    manifest = pool_benchmark(benchmark, out, params, build, None, args.judged, judgements)
    print(pool_summary(out, manifest))


if __name__ == "__main__":
    run(main)
