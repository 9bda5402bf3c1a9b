"""The tuning objective (evaluation/objective.py) and the joint abstention choice
(evaluation/joint_abstention.py): one formula, the Hit@10 floor, ties to the earlier candidate."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from mambomeme.errors import TuningError
from mambomeme.evaluation.joint_abstention import Fitted, choose_with_abstention
from mambomeme.evaluation.objective import tuning_objective
from mambomeme.evaluation.score import Components


def components(
    q: float | None, e: float | None, c: float, s: float | None, hit10: float | None
) -> Components:
    return Components(
        slice_ndcg={}, Q=q, E=e, hit10=hit10, correct_empty=0.5, C=c, safe_ordinary=None,
        safe_safety=None, S=s, safety_hit10=None, latency_p95_ms=None, L=0.0, error_rate=0.0,
        R=1.0, critical_shown=0.0, mmts_raw=0.0,
    )  # fmt: skip


def test_objective_is_the_quality_part_of_mmts() -> None:
    scored = tuning_objective(components(0.8, 0.6, 0.5, 1.0, 0.95), 0.9, "b")
    assert scored.value == pytest.approx(0.55 * 0.8 + 0.15 * 0.6 + 0.10 * 0.5 + 0.10 * 1.0)
    assert not scored.below_floor and scored.hit10 == 0.95 and scored.correct_empty == 0.5


def test_objective_counts_missing_parts_as_zero_and_loses_one_below_the_floor() -> None:
    scored = tuning_objective(components(0.8, None, 0.5, None, 0.85), 0.9, "b")
    assert scored.value == pytest.approx(0.55 * 0.8 + 0.10 * 0.5 - 1.0)
    assert scored.below_floor and dict(scored.quality) == {"Q": 0.8, "E": 0.0, "C": 0.5, "S": 0.0}


def test_objective_without_answerable_queries_names_the_benchmark() -> None:
    with pytest.raises(TuningError, match="dev-bench: no answerable query"):
        tuning_objective(components(None, None, 0.0, None, None), 0.9, "dev-bench")


def point(lexical: float, dense: float, k: int, objective: float) -> dict[str, Any]:
    config = {"route_weights.lexical": lexical, "route_weights.dense": dense, "rrf_k": k}
    return {"config": config, "objective": objective, "phase": "grid"}


def test_joint_choice_trains_once_per_route_combination_and_keeps_the_best() -> None:
    curve = [
        point(1, 0, 20, 0.5),
        point(1, 0, 60, 0.6),
        point(1, 1, 60, 0.55),
        point(0, 1, 60, 0.4),
    ]
    fitted: list[Mapping[str, Any]] = []

    def fit(config: Mapping[str, Any]) -> Fitted:
        fitted.append(config)
        return Fitted({"threshold": config["rrf_k"]}, {"chosen": 3}, frozenset())

    gains = {(1, 0): 0.0, (1, 1): 0.1}  # abstention helps the two-route point most

    def evaluate(config: Mapping[str, Any], withheld: frozenset[tuple[str, ...]]) -> float:
        key = (config["route_weights.lexical"], config["route_weights.dense"])
        return next(p["objective"] for p in curve if p["config"] == config) + gains[key]

    best = choose_with_abstention(curve, 2, evaluate, fit)
    assert [c["rrf_k"] for c in fitted] == [60, 60]  # the best k of each combination, 2 of 3
    assert best["config"] == curve[2]["config"] and best["objective"] == pytest.approx(0.65)
    assert best["abstention"] == {"threshold": 60} and best["abstention_report"] == {"chosen": 3}
    assert [t["without"] for t in best["joint_candidates"]] == [0.6, 0.55]


def test_joint_choice_breaks_ties_to_the_better_without_candidate() -> None:
    curve = [point(1, 0, 60, 0.6), point(0, 1, 60, 0.5)]
    best = choose_with_abstention(
        curve,
        2,
        lambda config, withheld: 0.7,
        lambda c: Fitted({}, {"chosen": None}, frozenset()),
    )
    assert best["config"] == curve[0]["config"]


def test_joint_choice_with_no_candidate_is_a_typed_error() -> None:
    with pytest.raises(TuningError, match="tuning.abstention"):
        choose_with_abstention([], 12, lambda c, w: 0.0, lambda c: Fitted({}, {}, frozenset()))
