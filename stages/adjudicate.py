"""DVC stage adjudicate: annotator files -> agreement, queue, a frozen judgement set, scored copy.

    python stages/adjudicate.py

Paths from params.yaml (B = evaluation.benchmark_name): the benchmark evaluation.benchmark and
its pool.yaml, pool pools/B, annotator files judgements/B/annotator-a.csv and -b.csv (names from
pool.yaml) and annotator-c.csv, judgement sets judgement-sets/B/B-jN, the third annotator's
queue pools/B-queue/annotator-c/, the scored benchmark <base.reports>/benchmark/.

Exit 3 (AnnotationsPendingError.exit_code: the pipeline stops, nothing is frozen or scored)
while an annotator file is missing or disagreement-queue pairs have no grade in
annotator-c.csv; the queue's blind export is written first and the message names it.
Otherwise the set is regenerated from the files: identical to an existing version -> verified,
nothing written; else a new version B-j<N+1> (never overwritten).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run, stage_params  # noqa: E402

from mambomeme.config import build_dir, check_benchmark_dir, scored_benchmark_dir  # noqa: E402
from mambomeme.errors import BenchmarkError  # noqa: E402
from mambomeme.evaluation.annotation_workflow import adjudicate_run  # noqa: E402
from mambomeme.search.items import ItemTable  # noqa: E402


def main() -> None:
    params = stage_params(__doc__.splitlines()[0])
    benchmark = Path(params["evaluation"]["benchmark"])
    name = str(params["evaluation"]["benchmark_name"])
    if benchmark.name != name:
        raise BenchmarkError(
            f"params evaluation.benchmark_name is {name!r} but evaluation.benchmark is {benchmark}"
        )
    build = build_dir(params)
    # AnnotationsPendingError (waiting for annotators) exits 3 through _common.run, as
    # `mambomeme adjudicate` does (its exit_code)
    done = adjudicate_run(
        benchmark,
        benchmark / "pool.yaml",
        Path("pools") / name,
        Path("judgements") / name,
        Path("judgement-sets") / name,
        Path("pools") / f"{name}-queue",
        scored_benchmark_dir(params),
        ItemTable(build),
        build,
        check_benchmark_dir(params),
    )
    print(done.summary())


if __name__ == "__main__":
    run(main)
