"""DVC stage overlap: how much of each dev benchmark's wording is our own text (issue 31).

    python stages/overlap.py --corpus NAME

Benchmarks: corpora.NAME.overlap (default: the corpus's dev benchmark), each benchmarks/B.
Items from build/NAME, knowledge from ingest.knowledge. Writes <base.reports>/overlap.json and
overlap.md (evaluation/overlap_report.py); the score stage shows it in the scorecard.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run, stage_params  # noqa: E402

from mambomeme.config import build_dir, corpus_config  # noqa: E402
from mambomeme.corpus.knowledge import load_knowledge  # noqa: E402
from mambomeme.evaluation.overlap_report import measure, write_report  # noqa: E402
from mambomeme.search.items import ItemTable  # noqa: E402


def main() -> None:
    params = stage_params(__doc__.splitlines()[0])
    _, corpus = corpus_config(params)
    names = [str(b) for b in corpus.get("overlap", [params["evaluation"]["benchmark_name"]])]
    report = measure(
        {name: Path("benchmarks") / name for name in names},
        ItemTable(build_dir(params)),
        load_knowledge(Path(params["ingest"]["knowledge"])),
    )
    for path in write_report(report, Path(params["base"]["reports"])):
        print(f"overlap: wrote {path}")


if __name__ == "__main__":
    run(main)
