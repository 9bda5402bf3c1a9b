"""DVC stage score: the runs of every system -> reports/scorecard.md|json, metrics.json, plots/.

Scored against <base.reports>/benchmark/ (the adjudicate stage's output), so the scorecard names
the judgement set, its agreement and how much of the current pool is still unjudged
(mambomeme/evaluation/corpus_stages.py: score_corpus).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run, stage_params  # noqa: E402

from mambomeme.evaluation.corpus_stages import score_corpus  # noqa: E402


def main() -> None:
    card = score_corpus(stage_params(__doc__.splitlines()[0]))
    for row in card.systems:
        print(f"score {row.system}: MMTS {row.mmts:.2f} {row.status}")
    if card.acceptance is not None:
        print(f"decision: {card.acceptance.decision}")


if __name__ == "__main__":
    run(main)
