"""DVC stage checks: every system on the locked check split and the second-check benchmarks.

    python stages/checks.py --corpus NAME

Targets: <base.reports>/benchmark-check/ (the adjudicate stage's check side, when the dev
benchmark has a split) and each benchmark of corpora.NAME.checks.second (assembled from its
newest judgement set under runs-check/NAME/B/benchmark/), and the tune side for the extra
selections only (the scorecard scores everything else there). Systems: corpora.NAME.checks.
systems (default: the corpus's scored systems), the shipped selection, and each named extra
selection (corpora.NAME.checks.selections: label -> selection.json). Writes
runs-check/NAME/<target>/<label>.trec and <base.reports>/checks.json (read by stage score).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run, stage_params  # noqa: E402

from mambomeme.evaluation.corpus_stages import check_corpus  # noqa: E402


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    result = check_corpus(stage_params(__doc__.splitlines()[0]))
    for name, target in result["targets"].items():
        rows = ", ".join(f"{s} {r['mmts_raw']:.1f}" for s, r in target["systems"].items())
        print(f"checks {name} ({target['queries']} queries): raw MMTS {rows}")


if __name__ == "__main__":
    run(main)
