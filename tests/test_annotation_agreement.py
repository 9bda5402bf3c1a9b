"""Agreement figures cross-checked against scikit-learn and krippendorff, and hand arithmetic."""

from __future__ import annotations

import random

import pytest
from sklearn.metrics import cohen_kappa_score

from mambomeme.evaluation.adjudicate import disagreements, finalise
from mambomeme.evaluation.agreement import (
    agreement,
    exact_agreement,
    ordinal_alpha,
    quadratic_kappa,
)
from mambomeme.evaluation.annotations import Label


def test_quadratic_kappa_matches_sklearn() -> None:
    rng = random.Random(7)
    for _ in range(20):
        a = [rng.randint(0, 3) for _ in range(40)]
        b = [min(3, max(0, x + rng.choice((-2, -1, 0, 0, 1)))) for x in a]
        assert quadratic_kappa(a, b) == pytest.approx(
            cohen_kappa_score(a, b, weights="quadratic", labels=[0, 1, 2, 3])
        )


def test_quadratic_kappa_by_hand() -> None:
    # a = [0, 3], b = [0, 2]: O has (0,0)=1,(3,2)=1; rows (1,0,0,1)/2, cols (1,0,1,0)/2
    # sum(w*O) = 1/9; E = outer / 2 -> cells (0,0)=.5,(0,2)=.5,(3,0)=.5,(3,2)=.5
    # sum(w*E) = .5*(0 + 4/9 + 9/9 + 1/9) = 7/9 -> kappa = 1 - (1/9)/(7/9)
    assert quadratic_kappa([0, 3], [0, 2]) == pytest.approx(1 - 1 / 7)
    assert quadratic_kappa([2, 2], [2, 2]) is None  # one grade used: undefined, not 1


def test_alpha_is_ordinal_not_interval() -> None:
    import krippendorff

    a, b = [0, 0, 0, 0, 1, 3, 3, 2, 0, 1], [0, 0, 0, 1, 1, 2, 3, 3, 0, 0]
    ours = ordinal_alpha(a, b)
    interval = krippendorff.alpha(reliability_data=[a, b], level_of_measurement="interval")
    ordinal = krippendorff.alpha(
        reliability_data=[a, b], level_of_measurement="ordinal", value_domain=[0, 1, 2, 3]
    )
    assert ours == pytest.approx(ordinal)
    assert ours != pytest.approx(interval)
    assert ordinal_alpha([0, 1, 3], [0, 1, 3]) == pytest.approx(1.0)


def test_exact_agreement_and_slices() -> None:
    assert exact_agreement([1, 2, 3, 0], [1, 2, 0, 0]) == 3 / 4

    def labels(grades: dict[tuple[str, str], int], unsafe: str = "") -> dict:
        return {
            k: Label(*k, g, "unsafe" if k[1] == unsafe else "safe", "t") for k, g in grades.items()
        }

    a = labels({("q1", "x"): 3, ("q1", "y"): 0, ("q2", "x"): 2, ("q2", "z"): 1})
    b = labels({("q1", "x"): 2, ("q1", "y"): 2, ("q2", "x"): 2, ("q2", "z"): 1}, unsafe="z")
    report = agreement(a, b, {"q1": "entity", "q2": "topic"})
    assert report["overall"]["exact"] == 2 / 4
    assert report["slices"]["topic"]["exact"] == 1.0
    assert report["safety"] == {"items": 3, "exact": 2 / 3, "unsafe_a": 0, "unsafe_b": 1}
    assert disagreements(a, b) == [("q1", "y"), ("q2", "z")]
    third = labels({("q1", "y"): 1, ("q2", "z"): 1}, unsafe="z")
    finals = {(f.qid, f.item_id): f for f in finalise(a, b, third)}
    assert finals[("q1", "x")].grade == 2 and finals[("q1", "x")].mean == 2.5
    assert finals[("q1", "y")].grade == 1 and finals[("q1", "y")].adjudicated
    assert finals[("q2", "z")].safety == "unsafe"


def test_within_one_counts_grades_at_most_one_apart() -> None:
    from mambomeme.evaluation.agreement import within_one

    assert within_one([0, 1, 3, 2], [0, 2, 1, 2]) == 3 / 4
    assert within_one([], []) is None
