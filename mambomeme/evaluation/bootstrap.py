"""Paired bootstrap over query families (seeds/000 "Hard gates"; seeds/003's cluster bootstrap).

Families, not queries, are the unit: paraphrases of one family are not independent, so each
resample draws as many families as the benchmark has, uniformly with replacement, and every
query of a drawn family comes along (a family drawn twice counts twice). The same draws are used
for every system, so a difference is computed on the same resampled benchmark (paired). Each
resample is scored by the same `aggregate` and gate code as the point estimate; intervals are
the 2.5th and 97.5th percentiles of the resampled values. A resample that lacks a slice leaves
that slice's value undefined (NaN) and it is left out of that slice's interval only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mambomeme.config import EvaluationParams
from mambomeme.evaluation.benchmark import SLICES
from mambomeme.evaluation.gates import GateInputs, evaluate_gates, final_score, passes_all
from mambomeme.evaluation.score import OutcomeTable, QueryOutcome, aggregate

DEFAULT_RESAMPLES = EvaluationParams.bootstrap_resamples
METRICS = ("Q", "MMTS", "MMTS_raw", *(f"ndcg_{s}" for s in SLICES))


@dataclass(frozen=True)
class Interval:
    low: float | None
    high: float | None
    resamples: int  # resamples where the value was defined


@dataclass(frozen=True)
class BootstrapResult:
    seed: int
    resamples: int
    families: int
    score: Mapping[str, Interval]  # system -> interval of its gated MMTS-Search-v1 score
    pass_fraction: Mapping[str, float]  # system -> share of resamples passing every gate
    differences: Mapping[tuple[str, str], Mapping[str, Interval]]  # (a, b) -> metric -> a - b


def family_weights(families: Sequence[str], resamples: int, seed: int) -> npt.NDArray[np.float64]:
    """(resamples x queries) counts: how often each query's family was drawn in each resample."""
    names = sorted(set(families))
    position = {name: i for i, name in enumerate(names)}
    of_query = np.array([position[f] for f in families], dtype=np.int64)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(names), size=(resamples, len(names)))
    counts = np.stack([np.bincount(row, minlength=len(names)) for row in draws])
    return counts[:, of_query].astype(np.float64)


def _values(
    table: OutcomeTable, inputs: GateInputs, weights: npt.NDArray[np.float64]
) -> tuple[dict[str, npt.NDArray[np.float64]], npt.NDArray[np.bool_]]:
    values = {name: np.full(len(weights), np.nan) for name in METRICS}
    passed = np.zeros(len(weights), dtype=bool)
    for b, w in enumerate(weights):
        components = aggregate(table, w)
        gates = evaluate_gates(components, inputs)
        values["Q"][b] = np.nan if components.Q is None else components.Q
        values["MMTS"][b] = final_score(components, gates)[0]
        values["MMTS_raw"][b] = components.mmts_raw
        for s in SLICES:
            v = components.slice_ndcg[s]
            values[f"ndcg_{s}"][b] = np.nan if v is None else v
        passed[b] = passes_all(gates)
    return values, passed


def interval(values: npt.NDArray[np.float64]) -> Interval:
    """2.5th/97.5th percentiles of the defined values (linear interpolation, numpy default)."""
    defined = values[~np.isnan(values)]
    if len(defined) == 0:
        return Interval(None, None, 0)
    low, high = np.percentile(defined, [2.5, 97.5])
    return Interval(float(low), float(high), len(defined))


def paired_bootstrap(
    outcomes: Mapping[str, Sequence[QueryOutcome]],
    inputs: Mapping[str, GateInputs],
    pairs: Sequence[tuple[str, str]],
    *,
    seed: int,
    resamples: int = DEFAULT_RESAMPLES,
) -> BootstrapResult:
    """Intervals per system and for `a - b` of every pair, from the same family resamples."""
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    systems = list(outcomes)
    if not systems:
        raise ValueError("no systems to bootstrap")
    for pair in pairs:
        if pair[0] not in outcomes or pair[1] not in outcomes:
            raise ValueError(f"pair {pair} names a system without outcomes")
    qids = [o.qid for o in outcomes[systems[0]]]
    for system in systems:
        if [o.qid for o in outcomes[system]] != qids:
            raise ValueError(f"{system}: outcomes are not over the same queries in the same order")
    families = [o.family for o in outcomes[systems[0]]]
    weights = family_weights(families, resamples, seed)
    values: dict[str, dict[str, npt.NDArray[np.float64]]] = {}
    passed: dict[str, float] = {}
    for system in systems:
        table = OutcomeTable.of(outcomes[system])
        values[system], ok = _values(table, inputs.get(system, GateInputs()), weights)
        passed[system] = float(ok.mean())
    differences = {
        (a, b): {m: interval(values[a][m] - values[b][m]) for m in METRICS} for a, b in pairs
    }
    return BootstrapResult(
        seed=seed,
        resamples=resamples,
        families=len(set(families)),
        score={s: interval(values[s]["MMTS"]) for s in systems},
        pass_fraction=passed,
        differences=differences,
    )
