"""Route weights and the abstention threshold chosen together (the tune stage, seeds/003).

For the best grid point of each route-weight combination (the `candidates` best of them, by
objective without abstention), train the abstention model for that config (threshold from
out-of-fold probabilities, models/abstention/train.py) and score the tuning objective with
the lists it withholds emptied; keep the best (ties within 1e-12: the earlier, i.e.
better-without, candidate). Training and scoring are injected, so this module reads no data.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mambomeme.errors import TuningError

Withheld = frozenset[tuple[str, ...]]
TIE = 1e-12


@dataclass(frozen=True)
class Fitted:
    """An abstention model trained for one config: its mapping (selection.json's
    `abstention`), its report, and the cues of the queries whose lists it empties."""

    model: Mapping[str, Any]
    report: Mapping[str, Any]
    withheld: Withheld


Evaluate = Callable[[Mapping[str, Any], Withheld], float]
Fit = Callable[[Mapping[str, Any]], Fitted]  # config -> the abstention model trained for it


def choose_with_abstention(
    curve: Sequence[Mapping[str, Any]], candidates: int, evaluate: Evaluate, fit: Fit
) -> dict[str, Any]:
    """Fields for selection.json: `config`, `objective`, `abstention` (the model),
    `abstention_report` and `joint_candidates` (every candidate tried, with and without)."""
    best_per_routes: dict[tuple[Any, ...], Mapping[str, Any]] = {}
    for point in curve:
        key = tuple(sorted((k, v) for k, v in point["config"].items() if k.startswith("route_")))
        if key not in best_per_routes or point["objective"] > best_per_routes[key]["objective"]:
            best_per_routes[key] = point
    ranked = sorted(best_per_routes.values(), key=lambda p: -p["objective"])[:candidates]
    tried = []
    best: dict[str, Any] | None = None
    for point in ranked:
        fitted = fit(point["config"])
        objective = evaluate(point["config"], fitted.withheld)
        tried.append({"config": point["config"], "without": point["objective"],
                      "with_abstention": objective, "chosen": fitted.report["chosen"]})  # fmt: skip
        if best is None or objective > best["objective"] + TIE:
            best = {"config": dict(point["config"]), "objective": objective,
                    "abstention": fitted.model, "abstention_report": fitted.report}  # fmt: skip
    if best is None:
        raise TuningError("tuning.abstention: no grid point to train the abstention model for")
    best["joint_candidates"] = tried
    return best
