"""Scores on benchmarks nobody tunes on (issue 31): the dev benchmark's locked check split and
earlier dev versions as second checks, shown beside the tune side in the scorecard.

Each target is a FORMAT.md benchmark folder with its frozen judgements: the adjudicate stage's
`<reports>/benchmark-check/` and, per second check B, `<run dir>/B/benchmark/` (beside B's runs)
assembled here from benchmarks/B and B's newest judgement set. Every listed system (and the
shipped selection) runs over each target and is scored by the scorecard's own code; only a
compact summary per system is kept (checks.json). The check side is scored once per pipeline
run; nobody reads its queries while changing the ranking (docs/annotation.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mambomeme.config import EvaluationParams
from mambomeme.corpus.manifest import write_json_atomic
from mambomeme.errors import BenchmarkError
from mambomeme.evaluation import judgement_sets as js
from mambomeme.evaluation.benchmark import load_benchmark
from mambomeme.evaluation.evaluate import execute_run
from mambomeme.evaluation.scorecard import build_scorecard
from mambomeme.evaluation.scorecard_types import SystemRow
from mambomeme.evaluation.split import has_check

CHECKS_FILE = "checks.json"
VERSION = "checks-v1"


@dataclass(frozen=True)
class Target:
    name: str  # "check", "tune" or a second check's benchmark name
    benchmark_dir: Path
    only: frozenset[str] | None = None  # run only these runner labels (None: every runner)


@dataclass(frozen=True)
class Runner:
    """One scored row: `label` is what the scorecard calls it; `system` runs on `engine`."""

    label: str
    engine: Any
    system: str
    params: Mapping[str, Any]


def second_check(benchmark: str, benchmarks: Path, sets: Path, out: Path) -> Target:
    """benchmarks/B with B's newest judgement set, assembled into `out`."""
    found = js.versions(sets / benchmark, benchmark)
    if not found:
        raise BenchmarkError(f"second check {benchmark!r}: no judgement set in {sets / benchmark}")
    js.write_scored_benchmark(benchmarks / benchmark, found[-1][1], out, {"second_check": True})
    return Target(benchmark, out)


def targets(
    check_dir: Path,
    second: Sequence[str],
    benchmarks: Path,
    sets: Path,
    run_dir: Path,
    tune: tuple[Path, frozenset[str]] | None = None,
) -> list[Target]:
    """The check side (when the dev benchmark has one), every second check and, with `tune`
    (folder, labels), the tune side for runners the scorecard itself does not score (frozen
    earlier selections), so they can be compared on all sides."""
    found = [Target("check", check_dir)] if has_check(check_dir) else []
    if tune is not None and found and tune[1]:
        found.append(Target("tune", tune[0], tune[1]))
    for name in second:
        found.append(second_check(name, benchmarks, sets, run_dir / name / "benchmark"))
    return found


def summary(row: SystemRow) -> dict[str, Any]:
    """A scorecard row's headline figures (as its scorecard.json row writes them)."""
    full = row.to_json()
    keys = ("mmts", "mmts_raw", "status", "components", "coverage", "safety", "slice_ndcg")
    return {key: full[key] for key in keys}


def score_targets(
    found: Sequence[Target],
    runners: Sequence[Runner],
    run_dir: Path,
    build: Path,
    corpus_manifest: Path,
    gates_input: Path | None,
    seed: int,
    resamples: int,
) -> dict[str, Any]:
    """Run and score every runner on every target; the checks.json content."""
    result: dict[str, Any] = {"version": VERSION, "targets": {}}
    for target in found:
        benchmark = load_benchmark(target.benchmark_dir)
        runs = {}
        for runner in runners:
            if target.only is not None and runner.label not in target.only:
                continue
            out = run_dir / target.name / f"{runner.label}.trec"
            out.parent.mkdir(parents=True, exist_ok=True)
            label = runner.label if runner.label != runner.system else None
            runs[runner.label] = execute_run(
                runner.engine, benchmark, runner.system, out, build, corpus_manifest,
                EvaluationParams.from_params(runner.params.get("evaluation")).warmups,
                force=True, label=label,
            )  # fmt: skip
        card = build_scorecard(
            benchmark, runs, gates_input=gates_input, seed=seed, resamples=resamples
        )
        result["targets"][target.name] = {
            "benchmark": benchmark.info.name,
            "judgement_set": benchmark.info.judgement_set,
            "queries": len(benchmark.queries),
            "families": card.families,
            "systems": {row.system: summary(row) for row in card.systems},
        }
    return result


def write_checks(result: Mapping[str, Any], out_dir: Path) -> Path:
    path = Path(out_dir) / CHECKS_FILE
    write_json_atomic(path, result)
    return path


def read_checks(reports: Path) -> dict[str, Any] | None:
    path = Path(reports) / CHECKS_FILE
    if not path.is_file():
        return None
    value = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(value, dict) or "targets" not in value:
        raise BenchmarkError(f"{path}: not a checks file")
    return value
