"""DVC stage adjudicate: two annotator files (+ the third's, if queued) -> a frozen judgement set.

    python stages/adjudicate.py BENCHMARK_DIR POOL_DIR JUDGEMENTS_DIR SET_DIR QUEUE_DIR [--build B]

Reads JUDGEMENTS_DIR/annotator-a.csv and annotator-b.csv (names from BENCHMARK_DIR/pool.yaml).
If their disagreement queue is not empty and JUDGEMENTS_DIR/annotator-c.csv is missing, writes
the third annotator's blind export to QUEUE_DIR/annotator-c/ and exits 3 (the pipeline stops
until that file exists). Otherwise writes SET_DIR (never overwritten; its folder name is the
judgement set's name) and publishes qrels.txt, safety.tsv, exact.jsonl and benchmark.json
(judgement_set = that name) into BENCHMARK_DIR.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run  # noqa: E402

from mambomeme.config import DEFAULT_PARAMS, build_dir, load_params  # noqa: E402
from mambomeme.evaluation.annotate_commands import adjudicate_run  # noqa: E402
from mambomeme.search.items import ItemTable  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    for name in ("benchmark", "pool", "judgements"):
        parser.add_argument(name, type=Path)
    parser.add_argument("set_dir", type=Path)
    parser.add_argument("queue", type=Path)
    parser.add_argument("--build", type=Path)
    args = parser.parse_args()
    build = args.build or build_dir(load_params(DEFAULT_PARAMS))
    code, message = adjudicate_run(
        args.benchmark,
        args.benchmark / "pool.yaml",
        args.pool,
        args.judgements,
        args.set_dir,
        args.queue,
        ItemTable(build),
        build,
    )
    print(message)
    if code:
        sys.exit(code)


if __name__ == "__main__":
    run(main)
