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

from mambomeme.evaluation.corpus_stages import run_shipped  # noqa: E402


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    ship, result = run_shipped(stage_params(__doc__.splitlines()[0]))
    print(f"run shipped ({ship.system}, {ship.source}): {len(result.errors)} errors")


if __name__ == "__main__":
    run(main)
