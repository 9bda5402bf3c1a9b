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

from mambomeme.config import (  # noqa: E402
    build_dir,
    check_benchmark_dir,
    corpus_config,
    evaluation_systems,
    scored_benchmark_dir,
)
from mambomeme.evaluation.checks import Runner, score_targets, targets, write_checks  # noqa: E402
from mambomeme.evaluation.evaluate import bootstrap_settings, find_corpus_manifest  # noqa: E402
from mambomeme.search.shipped import from_selection, shipped  # noqa: E402


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    params = stage_params(__doc__.splitlines()[0])
    _, corpus = corpus_config(params)
    settings = corpus.get("checks") or {}
    reports, build = Path(params["base"]["reports"]), build_dir(params)
    selections = {str(k): Path(v) for k, v in (settings.get("selections") or {}).items()}
    run_dir = Path("runs-check") / str(params["base"]["corpus"])
    run_dir.mkdir(parents=True, exist_ok=True)  # the stage's output, also with no target
    found = targets(
        check_benchmark_dir(params), list(settings.get("second", [])), Path("benchmarks"),
        Path("judgement-sets"), run_dir, (scored_benchmark_dir(params), frozenset(selections)),
    )  # fmt: skip
    runners: list[Runner] = []
    if found:
        from mambomeme.search.engine import Engine

        engine = Engine.open(build, params)
        systems = [str(s) for s in settings.get("systems", evaluation_systems(params))]
        runners = [Runner(s, engine, s, params) for s in systems]
        served = [("shipped", shipped(params, build, reports))]
        for label, path in selections.items():
            served.append((label, from_selection(params, path)))
        for label, ship in served:
            runners.append(Runner(label, Engine.open(build, ship.params), ship.system, ship.params))
    seed, resamples = bootstrap_settings(params, None, None)
    gates = reports / "gates-input.json"
    result = score_targets(
        found, runners, run_dir, build,
        find_corpus_manifest(build, None), gates if gates.exists() else None, seed, resamples,
    )  # fmt: skip
    write_checks(result, reports)
    for name, target in result["targets"].items():
        rows = ", ".join(f"{s} {r['mmts_raw']:.1f}" for s, r in target["systems"].items())
        print(f"checks {name} ({target['queries']} queries): raw MMTS {rows}")


if __name__ == "__main__":
    run(main)
