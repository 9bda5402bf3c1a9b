"""The semantic-search acceptance rule on constructed inputs."""

from __future__ import annotations

import dataclasses
from typing import Any

from mambomeme.evaluation.acceptance import KEEP, SHIP_BM25, decide
from mambomeme.evaluation.benchmark import SLICES, BenchmarkInfo
from mambomeme.evaluation.bootstrap import Interval
from mambomeme.evaluation.gates import FAIL, PASS, Gate
from mambomeme.evaluation.score import Components

HIDDEN = BenchmarkInfo("v1-hidden", "1", "hidden", "memes-10k@v1", "j1", False, False)
DEV = dataclasses.replace(HIDDEN, partition="dev")


def comps(q: float, **slices: float) -> Components:
    ndcg = {s: 0.6 for s in SLICES}
    ndcg.update(slices)
    return Components(
        ndcg, q, 0.8, 0.9, 0.8, 0.85, 1.0, 1.0, 1.0, 0.9, 100.0, 1.0, 0.0, 1.0, 0.0, 70.0
    )


def gates(**statuses: str) -> tuple[Gate, ...]:
    names = ["slice_ndcg", "exact_mrr", "hit10", "safe_list"]
    return tuple(Gate(n, statuses.get(n, PASS), None, "") for n in names)


def ci(low: float, high: float) -> Interval:
    return Interval(low, high, 1000)


def run(
    bm25: Components,
    hybrid: Components,
    info: BenchmarkInfo = HIDDEN,
    bm25_gates: tuple[Gate, ...] = gates(),
    hybrid_gates: tuple[Gate, ...] = gates(),
    **diffs: Interval,
) -> Any:
    return decide(info, bm25, hybrid, bm25_gates, hybrid_gates, diffs)


def test_overall_gain_with_positive_interval_keeps_dense() -> None:
    d = run(comps(0.60), comps(0.63), Q=ci(0.001, 0.06), ndcg_concept=ci(-0.01, 0.02))
    assert (d.keep_dense, d.decision, d.official) == (True, KEEP, True)


def test_concept_gain_alone_is_enough() -> None:
    d = run(comps(0.60), comps(0.61, concept=0.65), Q=ci(-0.01, 0.03), ndcg_concept=ci(0.01, 0.09))
    assert d.keep_dense


def test_gain_below_threshold_ships_bm25() -> None:
    d = run(comps(0.60), comps(0.629, concept=0.649), Q=ci(0.01, 0.05), ndcg_concept=ci(0.01, 0.08))
    assert (d.keep_dense, d.decision) == (False, SHIP_BM25)
    assert not d.checks[0].passed and "+0.0290" in d.checks[1].detail


def test_interval_touching_zero_ships_bm25() -> None:
    d = run(comps(0.60), comps(0.70), Q=ci(0.0, 0.2), ndcg_concept=ci(-0.1, 0.2))
    assert not d.keep_dense


def test_gate_regression_ships_bm25() -> None:
    d = run(comps(0.60), comps(0.70), hybrid_gates=gates(hit10=FAIL), Q=ci(0.05, 0.15))
    assert not d.keep_dense
    assert "hit10" in next(c.detail for c in d.checks if c.name == "no hard-gate regression")
    # a gate both fail is no regression
    d = run(
        comps(0.60),
        comps(0.70),
        bm25_gates=gates(hit10=FAIL),
        hybrid_gates=gates(hit10=FAIL),
        Q=ci(0.05, 0.15),
    )
    assert d.keep_dense


def test_exact_slice_regression_over_002_ships_bm25() -> None:
    d = run(comps(0.60), comps(0.70, entity=0.579), Q=ci(0.05, 0.15))
    assert not d.keep_dense
    d = run(comps(0.60), comps(0.70, quote=0.58), Q=ci(0.05, 0.15))  # exactly -0.02: allowed
    assert d.keep_dense


def test_dev_benchmark_decision_is_not_official() -> None:
    d = run(comps(0.60), comps(0.70), info=DEV, Q=ci(0.05, 0.15))
    assert d.keep_dense and not d.official
