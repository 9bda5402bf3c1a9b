"""DVC stage tune: grid-search the hybrid's search params on the dev benchmark -> selection.json.

The objective, the grid, the joint abstention choice and the usefulness model live in the
library (mambomeme/evaluation/tuning_run.py); this script reads params and reports progress.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run, stage_params  # noqa: E402

from mambomeme.evaluation.tuning_run import tune_corpus  # noqa: E402


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    params = stage_params(__doc__.splitlines()[0])
    tune_corpus(params, lambda line: print(line, flush=True))


if __name__ == "__main__":
    run(main)
