"""The evaluation stages of one corpus pipeline (run_systems, run_shipped, score, checks).

Each function is one DVC stage's whole work; stages/<name>.py parses arguments, calls it and
prints the figures it returns. Paths are the pipeline's (runs/<corpus>, runs-shipped/<corpus>,
runs-check/<corpus>, <base.reports>, build/<corpus>), relative to the repository root.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from mambomeme.config import (
    EvaluationParams,
    build_dir,
    check_benchmark_dir,
    corpus_config,
    evaluation_systems,
    scored_benchmark_dir,
)
from mambomeme.evaluation.benchmark import load_benchmark
from mambomeme.evaluation.checks import Runner, read_checks, score_targets, targets, write_checks
from mambomeme.evaluation.evaluate import (
    bootstrap_settings,
    execute_run,
    find_corpus_manifest,
    score_runs,
)
from mambomeme.evaluation.overlap_report import read_report
from mambomeme.evaluation.repro import write_repro
from mambomeme.evaluation.runs import Run
from mambomeme.evaluation.scorecard_types import Scorecard
from mambomeme.search.shipped import Shipped, from_selection, shipped

Progress = Callable[[str], None]
SAFETY_HOLDOUT_LINK = (
    "\n\nModeration on families nobody labelled (cross-fitted safety model, risk-aware "
    "lists): [safety-holdout.md](safety-holdout.md), `dvc repro safety_holdout`.\n"
)


def run_systems(params: dict[str, Any], progress: Progress) -> None:
    """Every system of evaluation.systems over the scored benchmark -> runs/<corpus>/."""
    benchmark = load_benchmark(scored_benchmark_dir(params))  # the adjudicated set
    build = build_dir(params)
    manifest = find_corpus_manifest(build, None)
    out_dir = Path("runs") / str(params["base"]["corpus"])
    from mambomeme.search.engine import Engine

    engine = Engine.open(build, params)
    for system in evaluation_systems(params):
        result = execute_run(
            engine, benchmark, system, out_dir / f"{system}.trec", build, manifest,
            EvaluationParams.from_params(params.get("evaluation")).warmups, force=True,
        )  # fmt: skip
        p95 = sorted(result.latency_ms.values())[int(0.95 * (len(result.latency_ms) - 1))]
        progress(
            f"run {system}: {len(benchmark.queries)} queries, {len(result.errors)} errors, "
            f"p95 ~{p95:.1f} ms"
        )


def run_shipped(params: dict[str, Any]) -> tuple[Shipped, Run]:
    """The shipped system (the frozen selection, search/shipped.py) over the scored benchmark
    -> runs-shipped/<corpus>/shipped.trec; returns what shipped and its run."""
    benchmark = load_benchmark(scored_benchmark_dir(params))
    build = build_dir(params)
    ship = shipped(params, build, Path(params["base"]["reports"]))
    from mambomeme.search.engine import Engine

    engine = Engine.open(build, ship.params)
    out = Path("runs-shipped") / str(params["base"]["corpus"]) / "shipped.trec"
    out.parent.mkdir(parents=True, exist_ok=True)
    result = execute_run(
        engine, benchmark, ship.system, out, build, find_corpus_manifest(build, None),
        EvaluationParams.from_params(ship.params.get("evaluation")).warmups, force=True,
        label="shipped",
    )  # fmt: skip
    return ship, result


def score_corpus(params: dict[str, Any]) -> Scorecard:
    """Score every run against <base.reports>/benchmark/ (the scored dev benchmark) -> the
    scorecard files, the safety-holdout link on its page, repro.json|md; returns the card."""
    evaluation = params["evaluation"]
    bench_dir = scored_benchmark_dir(params)  # queries + the adjudicated judgement set
    corpus = str(params["base"]["corpus"])
    runs = [Path("runs") / corpus / f"{system}.trec" for system in evaluation_systems(params)]
    shipped_run = Path("runs-shipped") / corpus / "shipped.trec"
    if shipped_run.exists():  # the frozen selection as served (stage run_shipped)
        runs.append(shipped_run)
    gates = evaluation.get("gates_input") or Path(params["base"]["reports"]) / "gates-input.json"
    seed, resamples = bootstrap_settings(
        EvaluationParams.from_params(evaluation), params.get("base", {}).get("seed"), None, None
    )
    reports = Path(params["base"]["reports"])
    extra = {"checks": read_checks(reports), "overlap": read_report(reports)}
    card = score_runs(
        bench_dir, runs, reports, Path(gates) if gates else None, seed, resamples, extra=extra
    )
    link_safety_holdout(reports)
    selection = reports / "selection.json"
    shared = Path("..") / "shared" / "benchmark"
    write_repro(
        params,
        reports,
        build_dir=Path("build") / corpus,
        corpus_manifest=Path("manifests") / f"corpus-{corpus}.json",
        benchmarks=[bench_dir],
        selection=selection if selection.exists() else None,
        template_groups=shared / "template-equivalences.csv",
        safety_policy=shared / "SAFETY-POLICY.md",
    )
    return card


def link_safety_holdout(reports: Path) -> None:
    """The scorecard page names the unseen-family moderation report when the corpus has one
    (stage safety_holdout writes it beside the scorecard; not a dependency: it reads the
    selection this pipeline tunes)."""
    if not (reports / "safety-holdout.md").exists():
        return
    page = reports / "scorecard.md"
    text = page.read_text(encoding="utf-8").rstrip("\n") + SAFETY_HOLDOUT_LINK
    tmp = page.with_name(f".{page.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(page)


def check_corpus(params: dict[str, Any]) -> dict[str, Any]:
    """Every system on the locked check split and the second-check benchmarks (stages/checks.py)
    -> runs-check/<corpus>/ and <base.reports>/checks.json; returns what checks.json holds."""
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
    seed, resamples = bootstrap_settings(
        EvaluationParams.from_params(params.get("evaluation")),
        params.get("base", {}).get("seed"),
        None,
        None,
    )
    gates = reports / "gates-input.json"
    result = score_targets(
        found, runners, run_dir, build,
        find_corpus_manifest(build, None), gates if gates.exists() else None, seed, resamples,
    )  # fmt: skip
    write_checks(result, reports)
    return result
