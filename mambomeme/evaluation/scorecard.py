"""Score every run of one benchmark and build the scorecard (evaluation/scorecard_types.py).

Order of rows: bm25, dense, hybrid, then the field ablations "hybrid-no-<field>", then anything
else. Each row has the gated MMTS-Search-v1 score, its status, the raw score, the components
(Q, E, C, S, L, R), every gate, per-slice metrics, diagnostics and the family-bootstrap interval.
Differences are bootstrapped for every system against the reference (bm25) and for every
ablation against hybrid. Versions of everything compared are recorded; runs whose versions
differ are refused before anything is scored (runs.check_comparable).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from mambomeme.evaluation.benchmark import Benchmark
from mambomeme.evaluation.bootstrap import DEFAULT_RESAMPLES
from mambomeme.evaluation.diagnostics import diagnostics
from mambomeme.evaluation.gates import final_score
from mambomeme.evaluation.runs import Run
from mambomeme.evaluation.score import slice_diagnostics
from mambomeme.evaluation.scorecard_types import (
    BootstrapSettings,
    Difference,
    Scorecard,
    SystemRow,
    Versions,
)
from mambomeme.evaluation.system_scores import score_systems
from mambomeme.evaluation.versions import SAFETY_POLICY, SCORE_VERSION
from mambomeme.search.systems import ABLATION

REFERENCE = "bm25"
CANDIDATE = "hybrid"
ABLATION_PREFIX = CANDIDATE + ABLATION  # "hybrid-no-<field>"


def system_order(systems: Sequence[str]) -> list[str]:
    """bm25, dense, hybrid first, then ablations, then the rest, each group alphabetical."""

    def key(name: str) -> tuple[int, str]:
        fixed = {"bm25": 0, "dense": 1, "hybrid": 2}
        if name in fixed:
            return fixed[name], ""
        return (3 if name.startswith(ABLATION_PREFIX) else 4), name

    return sorted(systems, key=key)


def build_scorecard(
    benchmark: Benchmark,
    runs: Mapping[str, Run],
    *,
    gates_input: Path | None = None,
    seed: int,
    resamples: int = DEFAULT_RESAMPLES,
) -> Scorecard:
    """Score `runs` (label, e.g. the run file path -> Run) against `benchmark`."""
    by_system = {run.system: run for run in runs.values()}
    systems = system_order(list(by_system))
    scored = score_systems(benchmark, runs, systems, gates_input=gates_input)
    outcomes, components, gates = scored.outcomes, scored.components, scored.gates
    rows: dict[str, SystemRow] = {}
    for system in systems:
        run = by_system[system]
        score, status = final_score(components[system], gates[system])
        rows[system] = SystemRow.scored(
            system,
            score,
            status,
            components[system],
            gates[system],
            slices=slice_diagnostics(outcomes[system]),
            diagnostics=diagnostics(benchmark, run, outcomes[system]),
            latency_ms=[o.latency_ms for o in outcomes[system]],
            run_meta=run.meta.to_dict(),
        )
    pairs = [(s, REFERENCE) for s in systems if s != REFERENCE and REFERENCE in systems]
    pairs += [
        (s, CANDIDATE) for s in systems if s.startswith(ABLATION_PREFIX) and CANDIDATE in systems
    ]
    boot = scored.bootstrap(pairs, seed=seed, resamples=resamples)
    for system in systems:
        rows[system] = rows[system].with_bootstrap(boot.score[system], boot.pass_fraction[system])
    acceptance = None
    if REFERENCE in systems and CANDIDATE in systems:
        acceptance = scored.decide(benchmark, REFERENCE, CANDIDATE, boot)
    first = by_system[systems[0]].meta
    made = first.provenance
    versions = Versions(
        benchmark=benchmark.info,
        benchmark_sha256=benchmark.sha256,
        safety_policy=SAFETY_POLICY,
        score_version=SCORE_VERSION,
        corpus_manifest_sha256=first.corpus_manifest_sha256,
        corpus_manifest=made.corpus_manifest if made else None,
        embedding_manifest_sha256=made.embedding_manifest_sha256 if made else None,
        embedding_manifest=made.embedding_manifest if made else None,
        code_commit=made.code_commit if made else None,
        embedding_manifests={s: _embedding_sha256(by_system[s]) for s in systems},
    )
    return Scorecard(
        versions=versions,
        queries=len(benchmark.queries),
        families=boot.families,
        bootstrap=BootstrapSettings(seed, resamples),
        systems=tuple(rows[s] for s in systems),
        differences=tuple(
            Difference(a, b, dict(d), _point_deltas(rows[a], rows[b]))
            for (a, b), d in boot.differences.items()
        ),
        acceptance=acceptance,
        runs={label: run.system for label, run in runs.items()},
    )


def _point_deltas(a: SystemRow, b: SystemRow) -> dict[str, float | None]:
    def minus(x: float | None, y: float | None) -> float | None:
        return None if x is None or y is None else x - y

    deltas = {
        "Q": minus(a.components.Q, b.components.Q),
        "MMTS": a.mmts - b.mmts,
        "MMTS_raw": a.mmts_raw - b.mmts_raw,
    }
    for name, value in a.slice_ndcg.items():
        deltas[f"ndcg_{name}"] = minus(value, b.slice_ndcg.get(name))
    return deltas


def _embedding_sha256(run: Run) -> str | None:
    made = run.meta.provenance
    return made.embedding_manifest_sha256 if made else None
