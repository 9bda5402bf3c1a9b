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

from mambomeme.evaluation.corpus_stages import run_systems  # noqa: E402


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    run_systems(stage_params(__doc__.splitlines()[0]), print)


if __name__ == "__main__":
    run(main)
