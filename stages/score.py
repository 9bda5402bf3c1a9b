"""DVC stage score: the runs of every system -> reports/scorecard.md|json, metrics.json, plots/.

Scored against <base.reports>/benchmark/ (the adjudicate stage's output), so the scorecard names
the judgement set, its agreement and how much of the current pool is still unjudged.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run, stage_params  # noqa: E402

from mambomeme.config import evaluation_systems, scored_benchmark_dir  # noqa: E402
from mambomeme.evaluation.checks import read_checks  # noqa: E402
from mambomeme.evaluation.evaluate import bootstrap_settings, score_runs  # noqa: E402
from mambomeme.evaluation.overlap_report import read_report  # noqa: E402
from mambomeme.evaluation.repro import write_repro  # noqa: E402


def main() -> None:
    params = stage_params(__doc__.splitlines()[0])
    evaluation = params["evaluation"]
    bench_dir = scored_benchmark_dir(params)  # queries + the adjudicated judgement set
    corpus = str(params["base"]["corpus"])
    runs = [Path("runs") / corpus / f"{system}.trec" for system in evaluation_systems(params)]
    shipped_run = Path("runs-shipped") / corpus / "shipped.trec"
    if shipped_run.exists():  # the frozen selection as served (stage run_shipped)
        runs.append(shipped_run)
    gates = evaluation.get("gates_input") or Path(params["base"]["reports"]) / "gates-input.json"
    seed, resamples = bootstrap_settings(params, None, None)
    reports = Path(params["base"]["reports"])
    extra = {"checks": read_checks(reports), "overlap": read_report(reports)}
    card = score_runs(
        bench_dir,
        runs,
        Path(params["base"]["reports"]),
        Path(gates) if gates else None,
        seed,
        resamples,
        extra=extra,
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
    for row in card["systems"]:
        print(f"score {row['system']}: MMTS {row['mmts']:.2f} {row['status']}")
    if card["acceptance"] is not None:
        print(f"decision: {card['acceptance']['decision']}")


def link_safety_holdout(reports: Path) -> None:
    """The scorecard page names the unseen-family moderation report when the corpus has one
    (stage safety_holdout writes it beside the scorecard; not a dependency: it reads the
    selection this pipeline tunes)."""
    if not (reports / "safety-holdout.md").exists():
        return
    page = reports / "scorecard.md"
    text = page.read_text(encoding="utf-8").rstrip("\n") + (
        "\n\nModeration on families nobody labelled (cross-fitted safety model, risk-aware "
        "lists): [safety-holdout.md](safety-holdout.md), `dvc repro safety_holdout`.\n"
    )
    tmp = page.with_name(f".{page.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(page)


if __name__ == "__main__":
    run(main)
