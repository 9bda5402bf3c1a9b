"""The tuning objective: the quality part of MMTS-Search-v1 with a Hit@10 floor (seeds/000).

    objective = 0.55 Q + 0.15 E + 0.10 C + 0.10 S  (- 1.0 when answerable Hit@10 < floor)

Latency and reliability are properties of the machine, not of the parameters, so they are left
out. Q alone would reward never returning an empty list; C keeps the evidence threshold honest.
The penalty makes any point above the floor beat every point below it (an abstention or
evidence threshold may not buy CorrectEmpty with answerable queries), while among points below
it the objective still orders. E and S count 0 when no query scores them (as in the score).
The grid search (evaluation/tuning_run.py), the joint abstention choice and the usefulness model
(models/usefulness/train.py) all score through `search_objective`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mambomeme.corpus.schema import Item
from mambomeme.errors import TuningError
from mambomeme.evaluation.benchmark import Benchmark
from mambomeme.evaluation.runner import SearchFn, run_benchmark
from mambomeme.evaluation.score import WEIGHTS, Components, OutcomeTable, aggregate, evaluate_run

BELOW_FLOOR_PENALTY = 1.0


@dataclass(frozen=True)
class Objective:
    """One scored point: the objective and the parts it was computed from."""

    value: float
    quality: Mapping[str, float]  # Q, E, C, S as counted (None components as 0)
    hit10: float  # answerable Hit@10 (0 when there is none)
    correct_empty: float | None
    below_floor: bool


def tuning_objective(parts: Components, floor: float, where: str) -> Objective:
    """The objective of aggregated components; `where` names the benchmark in the error raised
    when no answerable query falls in any primary slice (Q is undefined)."""
    if parts.Q is None:
        raise TuningError(f"{where}: no answerable query in any primary slice")
    quality = {"Q": parts.Q, "E": parts.E or 0.0, "C": parts.C, "S": parts.S or 0.0}
    value = sum(WEIGHTS[name] * v for name, v in quality.items())
    hit10 = parts.hit10 or 0.0
    below = hit10 < floor
    if below:  # feasible points first; among infeasible ones the objective still orders
        value -= BELOW_FLOOR_PENALTY
    return Objective(value, quality, hit10, parts.correct_empty, below)


def search_objective(
    benchmark: Benchmark,
    search: SearchFn,
    system: str,
    items: Mapping[str, Item],
    floor: float,
    where: str,
) -> Objective:
    """Run `search` over every benchmark query and score it. `items` (engine.items) gives each
    shown item's own safety class for the items safety.tsv does not label (without it an
    unlabelled item counts as unsafe, and S rewards shorter lists)."""
    run = run_benchmark(benchmark, search, system, items=items)
    return tuning_objective(aggregate(OutcomeTable.of(evaluate_run(benchmark, run))), floor, where)
