"""The scorecard's tune / check / second-check table (evaluation/report_checks.py)."""

from __future__ import annotations

from typing import Any

from mambomeme.evaluation.report_checks import checks_lines


def _row(raw: float, q: float) -> dict[str, Any]:
    return {"mmts": 59.0, "mmts_raw": raw, "components": {"Q": q}}


def test_table_shows_tune_check_second_checks_and_the_gap() -> None:
    scored = {"shipped": _row(70.0, 0.6)}
    checks = {
        "targets": {
            "check": {"benchmark": "dev-v3", "judgement_set": "dev-v3-j1", "queries": 90,
                      "families": 36, "systems": {"shipped": _row(64.5, 0.5),
                                                  "shipped@dev-v2": _row(60.0, 0.45)}},
            "dev-v2": {"benchmark": "dev-v2", "judgement_set": "dev-v2-j2", "queries": 211,
                       "families": 114, "systems": {"shipped": _row(80.0, 0.7)}},
            "tune": {"benchmark": "dev-v3", "judgement_set": "dev-v3-j1", "queries": 225,
                     "families": 89, "systems": {"shipped@dev-v2": _row(61.0, 0.47)}},
        }
    }  # fmt: skip
    lines = checks_lines(scored, checks)
    header = next(line for line in lines if line.startswith("| system"))
    assert "check MMTS" in header and "dev-v2 MMTS" in header and "tune MMTS" in header
    assert "| tune MMTS (raw) | tune Q | check MMTS (raw)" in header  # tune once, not twice
    shipped = next(line for line in lines if line.startswith("| shipped |"))
    assert shipped.endswith(f"| {64.5 - 70.0:.2f} | {0.5 - 0.6:.4f} |")
    old = next(line for line in lines if line.startswith("| shipped@dev-v2 |"))
    assert "59.00 (61.00)" in old and f"| {60.0 - 61.0:.2f} |" in old
    assert "| - | - |" in old  # no dev-v2 row for it
    assert checks_lines({}, None) == []
