"""Paired family bootstrap: deterministic under a seed, families move together, paired draws."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_eval_support import GOOD, make_run, tiny

from mambomeme.evaluation.bootstrap import family_weights, paired_bootstrap
from mambomeme.evaluation.gates import GateInputs
from mambomeme.evaluation.score import evaluate_run

ALL_GOOD = GateInputs(300.0, True, True, True)


def test_family_weights_keep_families_together() -> None:
    families = ["a", "b", "b", "c", "a"]
    weights = family_weights(families, 200, seed=7)
    assert weights.shape == (200, 5)
    assert np.array_equal(weights[:, 0], weights[:, 4]) and np.array_equal(
        weights[:, 1], weights[:, 2]
    )
    # each resample draws 3 families: the query-weighted total is 3 draws' worth of queries
    per_family = weights[:, [0, 1, 3]]
    assert np.all(per_family.sum(axis=1) == 3)
    assert np.array_equal(weights, family_weights(families, 200, seed=7))
    assert not np.array_equal(weights, family_weights(families, 200, seed=8))


def _outcomes(tmp_path: Path) -> dict[str, list]:
    benchmark = tiny(tmp_path)
    worse = {**GOOD, "invisible man": [], "cannot be seen": ["fx:9"], "john cena": ["fx:3", "fx:1"]}
    return {
        "bm25": evaluate_run(benchmark, make_run(benchmark, worse, "bm25")),
        "hybrid": evaluate_run(benchmark, make_run(benchmark, GOOD, "hybrid")),
        "copy": evaluate_run(benchmark, make_run(benchmark, worse, "copy")),
    }


def test_deterministic_and_identical_systems_give_zero_width(tmp_path: Path) -> None:
    outcomes = _outcomes(tmp_path)
    inputs = {s: ALL_GOOD for s in outcomes}
    pairs = [("hybrid", "bm25"), ("copy", "bm25")]
    first = paired_bootstrap(outcomes, inputs, pairs, seed=11, resamples=300)
    again = paired_bootstrap(outcomes, inputs, pairs, seed=11, resamples=300)
    assert first == again
    assert (first.seed, first.resamples, first.families) == (11, 300, 8)
    for metric, interval in first.differences[("copy", "bm25")].items():
        if interval.low is not None:
            assert (interval.low, interval.high) == (0.0, 0.0), metric
    q = first.differences[("hybrid", "bm25")]["Q"]
    assert q.low is not None and q.high is not None and 0 <= q.low <= q.high
    concept = first.differences[("hybrid", "bm25")]["ndcg_concept"]
    assert concept.low is not None and concept.low > 0  # hybrid wins the concept family outright
    other = paired_bootstrap(outcomes, inputs, pairs, seed=12, resamples=300)
    assert other.differences != first.differences


def test_pass_fraction(tmp_path: Path) -> None:
    outcomes = _outcomes(tmp_path)
    result = paired_bootstrap(outcomes, {"hybrid": ALL_GOOD}, [], seed=3, resamples=200)
    # bm25/copy get no gate inputs: the NOT EVALUATED gates fail every resample
    assert result.pass_fraction["bm25"] == 0.0 and result.pass_fraction["copy"] == 0.0
    assert 0.0 < result.pass_fraction["hybrid"] <= 1.0
    score = result.score["hybrid"]
    assert score.low is not None and score.high is not None and score.low <= score.high <= 100


def test_rejects_misaligned_outcomes(tmp_path: Path) -> None:
    outcomes = _outcomes(tmp_path)
    outcomes["copy"] = list(reversed(outcomes["copy"]))
    with pytest.raises(ValueError, match="same queries"):
        paired_bootstrap(outcomes, {}, [], seed=1, resamples=10)
