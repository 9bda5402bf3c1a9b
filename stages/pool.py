"""DVC stage pool: pool every system's top 10 (+ gold, hard negatives) into blind annotator files.

    python stages/pool.py BENCHMARK_DIR POOL_DIR [--judged BENCHMARK_DIR]

Reads BENCHMARK_DIR/queries.jsonl and BENCHMARK_DIR/pool.yaml (systems, depth, annotators and
their shuffle seeds, gold and hard-negative lists, exact-target file); the corpus is
build/<base.corpus>. Writes POOL_DIR/pool.jsonl, manifest.json and POOL_DIR/<annotator>/.
A pool folder is written once: remove it (dvc does, as a stage output) to pool again.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run  # noqa: E402

from mambomeme.config import DEFAULT_PARAMS  # noqa: E402
from mambomeme.evaluation.annotate_commands import pool_command  # noqa: E402


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("benchmark", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--judged", type=Path)
    parser.add_argument("--build", type=Path)
    args = parser.parse_args()
    args.config, args.params = None, DEFAULT_PARAMS
    pool_command(args)


if __name__ == "__main__":
    run(main)
