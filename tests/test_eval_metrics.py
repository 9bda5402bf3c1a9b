"""Hand-computed examples for every metric and every MMTS-Search-v1 component."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
from test_eval_support import GOOD, TickClock, fake_search, make_run, tiny, write_benchmark

from mambomeme.evaluation import metrics
from mambomeme.evaluation.benchmark import load_benchmark
from mambomeme.evaluation.runner import run_benchmark
from mambomeme.evaluation.runs import ResultDetail, run_meta
from mambomeme.evaluation.score import (
    OutcomeTable,
    aggregate,
    evaluate_run,
    slice_diagnostics,
    weighted_p95,
)

L3 = math.log2(3)
QRELS = {"a": 3, "b": 2, "c": 1, "z": 0}


def test_ndcg_exponential_gain_and_log_discount() -> None:
    # ranking c, a: gains 1 and 7 at ranks 1, 2; ideal a, b, c: 7, 3, 1 at ranks 1..3
    expected = (1 + 7 / L3) / (7 + 3 / L3 + 1 / 2)
    assert metrics.ndcg(["c", "a"], QRELS) == pytest.approx(expected, abs=1e-12)
    assert metrics.ndcg(["a", "b", "c"], QRELS) == pytest.approx(1.0)
    assert metrics.ndcg([], QRELS) == 0.0
    assert metrics.ndcg(["z", "unjudged"], QRELS) == 0.0
    assert metrics.ndcg(["a"], {"z": 0}) == 0.0  # ideal DCG 0


def test_ndcg_cuts_at_ten() -> None:
    ranking = [f"x{i}" for i in range(10)] + ["a"]
    assert metrics.ndcg(ranking, QRELS) == 0.0
    ranking = [f"x{i}" for i in range(9)] + ["a"]
    assert metrics.ndcg(ranking, QRELS) == pytest.approx((7 / math.log2(11)) / (7 + 3 / L3 + 1 / 2))


def test_rank_metrics_use_grade_two() -> None:
    ranking = ["c", "z", "b", "a"]
    assert metrics.reciprocal_rank(ranking, QRELS) == pytest.approx(1 / 3)
    assert metrics.hit(ranking, QRELS, 1) == 0.0
    assert metrics.hit(ranking, QRELS, 3) == 1.0
    assert metrics.recall(["c", "b"], QRELS) == pytest.approx(1 / 2)
    assert metrics.recall(["a"], {"c": 1}) == 0.0
    assert metrics.reciprocal_rank(["c"], QRELS) == 0.0


def test_exact_rr_first_item_of_any_group() -> None:
    groups = [["g1", "g2"], ["h1"]]
    assert metrics.exact_rr(["x", "h1", "g2"], groups) == pytest.approx(1 / 2)
    assert metrics.exact_rr(["x"] * 10 + ["g1"], groups) == 0.0
    assert metrics.exact_rr([], groups) == 0.0


def test_safe_list_uses_frozen_labels_then_corpus() -> None:
    judged = {"a": "safe", "b": "unsafe"}
    assert metrics.safe_list([], judged, {}) == (True, 0)
    assert metrics.safe_list(["a"], judged, {}) == (True, 0)
    assert metrics.safe_list(["a", "b"], judged, {}) == (False, 0)
    assert metrics.safe_list(["a", "n"], judged, {"n": "safe"}) == (True, 1)
    assert metrics.safe_list(["a", "n"], judged, {}) == (False, 1)  # unknown -> unsafe
    assert metrics.safe_list(["b"], judged, {"b": "safe"}) == (False, 0)  # frozen label wins


def _good_q() -> float:
    concept = (1 + (1 + 7 / L3) / (7 + 1 / L3)) / 2
    noisy = (3 + 7 / L3) / (7 + 3 / L3)
    return (1 + 1 / L3 + 1 + concept + 1 + noisy) / 6


def test_components_of_a_good_run(tmp_path: Path) -> None:
    benchmark = tiny(tmp_path)
    c = aggregate(OutcomeTable.of(evaluate_run(benchmark, make_run(benchmark, GOOD))))
    assert c.slice_ndcg["quote"] == pytest.approx(1 / L3)
    assert c.slice_ndcg["concept"] == pytest.approx((1 + (1 + 7 / L3) / (7 + 1 / L3)) / 2)
    assert c.Q == pytest.approx(_good_q())
    assert c.E == pytest.approx((1 + 1 / 2) / 2)
    assert (c.hit10, c.correct_empty, c.C) == (1.0, 1.0, 1.0)
    assert (c.safe_ordinary, c.safe_safety, c.S) == (1.0, 1.0, 1.0)
    assert c.latency_p95_ms == pytest.approx(50.0)
    assert (c.L, c.error_rate, c.R) == (1.0, 0.0, 1.0)
    expected = 100 * (0.55 * _good_q() + 0.15 * 0.75 + 0.10 + 0.10 + 0.05 + 0.05)
    assert c.mmts_raw == pytest.approx(expected)


def test_errors_get_zero_credit_everywhere(tmp_path: Path) -> None:
    benchmark = tiny(tmp_path)
    answers = {**GOOD, "john cena": RuntimeError("boom"), "zzqx person": RuntimeError("boom")}
    outcomes = evaluate_run(benchmark, make_run(benchmark, answers))
    c = aggregate(OutcomeTable.of(outcomes))
    assert c.slice_ndcg["entity"] == 0.0
    assert c.E == pytest.approx((0 + 1 / 2) / 2)
    assert c.hit10 == pytest.approx(6 / 7)
    assert c.correct_empty == pytest.approx(1 / 2)  # an error is not an empty result
    assert c.C == pytest.approx(2 * (6 / 7) * (1 / 2) / (6 / 7 + 1 / 2))
    assert c.safe_safety == pytest.approx(1 / 2)  # q-none-1 errored: no safety credit
    assert c.safe_ordinary == pytest.approx(6 / 7)  # q-entity errored
    assert c.S == pytest.approx((6 / 7 + 1 / 2) / 2)
    assert c.error_rate == pytest.approx(2 / 9)
    assert c.R == 0.0


def test_coverage_and_safety(tmp_path: Path) -> None:
    safety = {item: "safe" for item in [f"fx:{i}" for i in range(1, 13)]}
    safety["fx:6"] = "unsafe"
    benchmark = load_benchmark(write_benchmark(tmp_path / "b", safety=safety))
    answers = {**GOOD, "qqq zzz": ["fx:12"]}  # a no-match query answered: not CorrectEmpty
    c = aggregate(OutcomeTable.of(evaluate_run(benchmark, make_run(benchmark, answers))))
    assert c.correct_empty == pytest.approx(1 / 2)
    assert c.C == pytest.approx(2 * 1 * (1 / 2) / (1 + 1 / 2))
    # q-topic shows fx:6 (unsafe); it is one of the two safety-subset queries
    assert (c.safe_ordinary, c.safe_safety) == (1.0, 1 / 2)
    assert c.S == pytest.approx(3 / 4)
    everything_empty = {q: [] for q in GOOD}
    c = aggregate(OutcomeTable.of(evaluate_run(benchmark, make_run(benchmark, everything_empty))))
    assert (c.hit10, c.correct_empty, c.C) == (0.0, 1.0, 0.0)
    assert c.Q == 0.0 and c.S == 1.0


def test_unjudged_items_fall_back_to_corpus_safety(tmp_path: Path) -> None:
    benchmark = tiny(tmp_path)
    run = make_run(benchmark, {**GOOD, "wrestling": ["fx:6", "new:1"]})
    outcome = {o.qid: o for o in evaluate_run(benchmark, run)}["q-topic"]
    assert (outcome.safe, outcome.unjudged_safety, outcome.unjudged_top10) == (False, 1, ("new:1",))
    detail = ResultDetail(
        "q-topic", 2, "new:1", "g", "", "id:new:1", "p", "a", "l", "safe", (), 0.1
    )
    first = run.details["q-topic"][0]
    run = dataclasses.replace(run, details={**run.details, "q-topic": (first, detail)})
    outcome = {o.qid: o for o in evaluate_run(benchmark, run)}["q-topic"]
    assert (outcome.safe, outcome.unjudged_safety) == (True, 1)


def test_latency_p95_nearest_rank_and_l(tmp_path: Path) -> None:
    benchmark = tiny(tmp_path)
    steps = [100.0, 200.0, 300.0, 400.0, 500.0, 600.0, 700.0, 800.0, 900.0]
    run = run_benchmark(
        benchmark,
        fake_search(GOOD),
        "bm25",
        clock=TickClock(steps),
        meta=run_meta(benchmark, "bm25", "m" * 64),
    )
    c = aggregate(OutcomeTable.of(evaluate_run(benchmark, run)))
    assert c.latency_p95_ms == pytest.approx(900.0)  # ceil(0.95 * 9) = 9th of 9
    assert c.L == pytest.approx((1000 - 900) / 800)
    run = run_benchmark(
        benchmark,
        fake_search(GOOD),
        "bm25",
        clock=TickClock([600.0]),
        meta=run_meta(benchmark, "bm25", "m" * 64),
    )
    assert aggregate(OutcomeTable.of(evaluate_run(benchmark, run))).L == pytest.approx(0.5)
    run = run_benchmark(
        benchmark,
        fake_search(GOOD),
        "bm25",
        clock=TickClock([1500.0]),
        meta=run_meta(benchmark, "bm25", "m" * 64),
    )
    assert aggregate(OutcomeTable.of(evaluate_run(benchmark, run))).L == 0.0


def test_weighted_p95() -> None:
    values = np.array([10.0, 20.0, 30.0])
    assert weighted_p95(values, np.array([1.0, 1.0, 1.0])) == 30.0
    # 19 copies of 10 and one of 30: rank ceil(0.95 * 20) = 19 -> 10
    assert weighted_p95(values, np.array([19.0, 0.0, 1.0])) == 10.0
    assert weighted_p95(values, np.array([18.0, 0.0, 2.0])) == 30.0
    assert weighted_p95(values, np.zeros(3)) is None


def test_reliability_is_linear_to_one_percent(tmp_path: Path) -> None:
    benchmark = tiny(tmp_path)
    run = make_run(benchmark, {**GOOD, "john cena": RuntimeError("boom")})
    table = OutcomeTable.of(evaluate_run(benchmark, run))
    # the errored query once, the other eight 199 times in all: error rate 1/200 = 0.5%
    weights = np.array([1.0, 25.0, 25.0, 25.0, 25.0, 25.0, 25.0, 25.0, 24.0])
    c = aggregate(table, weights)
    assert c.error_rate == pytest.approx(1 / 200)
    assert c.R == pytest.approx(1 - (1 / 200) / 0.01)


def test_slice_diagnostics(tmp_path: Path) -> None:
    benchmark = tiny(tmp_path)
    table = slice_diagnostics(evaluate_run(benchmark, make_run(benchmark, GOOD)))
    assert table["quote"]["hit@1"] == 0.0 and table["quote"]["mrr@10"] == pytest.approx(1 / 2)
    assert table["concept"]["queries"] == 2
    assert table["concept"]["mrr@10"] == pytest.approx((1 + 1 / 2) / 2)
    assert table["topic"]["recall@10"] == 1.0
