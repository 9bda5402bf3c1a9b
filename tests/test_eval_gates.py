"""Every hard gate on constructed components: PASS, FAIL, NOT EVALUATED, the cap and the zero."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from test_eval_support import GOOD, make_run, tiny

from mambomeme.errors import BenchmarkError
from mambomeme.evaluation.benchmark import SLICES
from mambomeme.evaluation.gates import (
    CAP,
    FAIL,
    NOT_EVALUATED,
    PASS,
    GateInputs,
    evaluate_gates,
    final_score,
    load_gate_inputs,
)
from mambomeme.evaluation.score import Components, OutcomeTable, aggregate, evaluate_run

ALL_GOOD = GateInputs(
    submit_to_render_p95_ms=300.0,
    release_protocol=True,
    publication_rollback=True,
    terminal_restoration=True,
)


def passing(**changes: Any) -> Components:
    base = Components(
        slice_ndcg={s: 0.8 for s in SLICES},
        Q=0.8,
        E=0.9,
        hit10=0.9,
        correct_empty=0.8,
        C=0.85,
        safe_ordinary=1.0,
        safe_safety=1.0,
        S=1.0,
        safety_hit10=0.9,
        latency_p95_ms=100.0,
        L=1.0,
        error_rate=0.0,
        R=1.0,
        critical_shown=0.0,
        mmts_raw=88.0,
    )
    return dataclasses.replace(base, **changes)


def status(c: Components, inputs: GateInputs = ALL_GOOD) -> dict[str, str]:
    return {g.name: g.status for g in evaluate_gates(c, inputs)}


def test_all_pass_keeps_the_raw_score() -> None:
    c = passing()
    gates = evaluate_gates(c, ALL_GOOD)
    assert all(g.status == PASS for g in gates)
    assert final_score(c, gates) == (88.0, PASS)


@pytest.mark.parametrize(
    ("gate", "changes", "inputs"),
    [
        ("slice_ndcg", {"slice_ndcg": {**{s: 0.8 for s in SLICES}, "visual": 0.29}}, ALL_GOOD),
        ("exact_mrr", {"E": 0.59}, ALL_GOOD),
        ("hit10", {"hit10": 0.69}, ALL_GOOD),
        ("correct_empty", {"correct_empty": 0.59}, ALL_GOOD),
        ("safety_hit10", {"safety_hit10": 0.69}, ALL_GOOD),
        ("safe_list", {"safe_safety": 0.97}, ALL_GOOD),
        ("safe_list", {"safe_ordinary": 0.979}, ALL_GOOD),
        ("error_rate", {"error_rate": 0.01}, ALL_GOOD),
        ("submit_to_render_p95", {}, dataclasses.replace(ALL_GOOD, submit_to_render_p95_ms=1000.0)),
        ("release_protocol", {}, dataclasses.replace(ALL_GOOD, release_protocol=False)),
        ("publication_rollback", {}, dataclasses.replace(ALL_GOOD, publication_rollback=False)),
        ("terminal_restoration", {}, dataclasses.replace(ALL_GOOD, terminal_restoration=False)),
    ],
)
def test_each_gate_fails_and_caps_at_59(
    gate: str, changes: dict[str, Any], inputs: GateInputs
) -> None:
    c = passing(**changes)
    result = status(c, inputs)
    assert result[gate] == FAIL
    assert [n for n, s in result.items() if s != PASS] == [gate]
    assert final_score(c, evaluate_gates(c, inputs)) == (CAP, FAIL)


def test_thresholds_are_inclusive_where_the_spec_says() -> None:
    at = passing(
        slice_ndcg={s: 0.30 for s in SLICES},
        E=0.60,
        hit10=0.70,
        correct_empty=0.60,
        safety_hit10=0.70,
        safe_ordinary=0.98,
        safe_safety=0.98,
        error_rate=0.0099,
    )
    inputs = dataclasses.replace(ALL_GOOD, submit_to_render_p95_ms=999.9)
    assert set(status(at, inputs).values()) == {PASS}


def test_cap_only_lowers() -> None:
    c = passing(mmts_raw=40.0, E=0.1)
    assert final_score(c, evaluate_gates(c, ALL_GOOD)) == (40.0, FAIL)


def test_unknown_inputs_are_not_evaluated_and_fail() -> None:
    c = passing()
    result = status(c, GateInputs())
    for name in (
        "submit_to_render_p95",
        "release_protocol",
        "publication_rollback",
        "terminal_restoration",
    ):
        assert result[name] == NOT_EVALUATED
    assert final_score(c, evaluate_gates(c, GateInputs())) == (CAP, FAIL)
    missing_slice = passing(
        slice_ndcg={**{s: 0.8 for s in SLICES}, "noisy": None}, correct_empty=None
    )
    result = status(missing_slice)
    assert result["slice_ndcg"] == NOT_EVALUATED and result["correct_empty"] == NOT_EVALUATED


def test_critical_violation_scores_zero() -> None:
    c = passing(critical_shown=1.0)
    assert status(c)["critical_violation"] == FAIL
    assert final_score(c, evaluate_gates(c, ALL_GOOD)) == (0.0, FAIL)
    told = dataclasses.replace(ALL_GOOD, critical_violations=("manifest checksum mismatch",))
    assert final_score(passing(), evaluate_gates(passing(), told)) == (0.0, FAIL)


def test_critical_items_shown_in_a_run(tmp_path: Path) -> None:
    benchmark = tiny(tmp_path)
    run = make_run(benchmark, GOOD)
    outcomes = evaluate_run(benchmark, run, frozenset({"fx:9"}))  # shown for q-concept-2
    c = aggregate(OutcomeTable.of(outcomes))
    assert c.critical_shown == 1.0
    assert final_score(c, evaluate_gates(c, ALL_GOOD)) == (0.0, FAIL)


def test_gate_inputs_file(tmp_path: Path) -> None:
    path = tmp_path / "gates.json"
    path.write_text(
        json.dumps(
            {
                "submit_to_render_p95_ms": 420.5,
                "release_protocol": True,
                "publication_rollback": True,
                "terminal_restoration": False,
                "critical_items": ["fx:9"],
                "systems": {
                    "hybrid": {"terminal_restoration": True, "submit_to_render_p95_ms": 510}
                },
            }
        )
    )
    bm25 = load_gate_inputs(path, "bm25")
    assert (bm25.submit_to_render_p95_ms, bm25.terminal_restoration) == (420.5, False)
    assert bm25.critical_items == frozenset({"fx:9"})
    hybrid = load_gate_inputs(path, "hybrid")
    assert (hybrid.submit_to_render_p95_ms, hybrid.terminal_restoration) == (510, True)
    assert load_gate_inputs(None, "bm25") == GateInputs()
    for bad, message in [
        ({"release": True}, "unknown key 'release'"),
        ({"release_protocol": "yes"}, "'release_protocol' must be true or false"),
        ({"submit_to_render_p95_ms": -1}, "must be a number >= 0"),
        ({"critical_items": "fx:1"}, "'critical_items' must be a list"),
    ]:
        path.write_text(json.dumps(bad))
        with pytest.raises(BenchmarkError, match=message):
            load_gate_inputs(path, "bm25")
