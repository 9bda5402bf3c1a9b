"""The per-system scoring loop shared by the scorecard and the reranker's acceptance check.

For each run, in the order given: its gate inputs, one outcome per benchmark query, the
MMTS-Search-v1 components and every hard gate (evaluation/score.py, evaluation/gates.py); then
the paired family bootstrap over the same outcomes. Runs whose versions differ are refused
before anything is scored (runs.check_comparable).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mambomeme.evaluation.acceptance import Decision, decide
from mambomeme.evaluation.benchmark import Benchmark
from mambomeme.evaluation.bootstrap import BootstrapResult, paired_bootstrap
from mambomeme.evaluation.gates import Gate, GateInputs, evaluate_gates, load_gate_inputs
from mambomeme.evaluation.runs import Run, check_comparable
from mambomeme.evaluation.score import (
    Components,
    OutcomeTable,
    QueryOutcome,
    aggregate,
    evaluate_run,
)


@dataclass(frozen=True)
class SystemScores:
    """Each system's gate inputs, outcomes, components and gates (keyed by system name, in the
    order scored)."""

    inputs: Mapping[str, GateInputs]
    outcomes: Mapping[str, list[QueryOutcome]]
    components: Mapping[str, Components]
    gates: Mapping[str, tuple[Gate, ...]]

    def bootstrap(
        self, pairs: Sequence[tuple[str, str]], *, seed: int, resamples: int
    ) -> BootstrapResult:
        """Paired family-bootstrap intervals per system and for `a - b` of every pair."""
        return paired_bootstrap(self.outcomes, self.inputs, pairs, seed=seed, resamples=resamples)

    def decide(
        self, benchmark: Benchmark, baseline: str, candidate: str, boot: BootstrapResult
    ) -> Decision:
        """The seed's acceptance rule, `candidate` in hybrid's seat and `baseline` in BM25's."""
        return decide(
            benchmark.info,
            self.components[baseline],
            self.components[candidate],
            self.gates[baseline],
            self.gates[candidate],
            boot.differences[(candidate, baseline)],
        )


def score_systems(
    benchmark: Benchmark,
    runs: Mapping[str, Run],
    systems: Sequence[str] | None = None,
    *,
    gates_input: Path | None,
) -> SystemScores:
    """Score each run of `runs` (label -> Run) against `benchmark`, keyed by the run's system,
    in the order of `systems` (default: the order of `runs`)."""
    check_comparable(benchmark, runs)
    by_system = {run.system: run for run in runs.values()}
    inputs: dict[str, GateInputs] = {}
    outcomes: dict[str, list[QueryOutcome]] = {}
    components: dict[str, Components] = {}
    gates: dict[str, tuple[Gate, ...]] = {}
    for system in list(by_system) if systems is None else systems:
        inputs[system] = load_gate_inputs(gates_input, system)
        outcomes[system] = evaluate_run(benchmark, by_system[system], inputs[system].critical_items)
        components[system] = aggregate(OutcomeTable.of(outcomes[system]))
        gates[system] = evaluate_gates(components[system], inputs[system])
    return SystemScores(inputs, outcomes, components, gates)
