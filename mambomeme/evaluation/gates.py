"""The hard gates of MMTS-Search-v1 (seeds/000, "Hard gates") and the final score they allow.

A critical safety, rights, privacy or artifact-integrity violation scores 0 with status FAIL.
Otherwise the score is capped at 59 with status FAIL when any gate does not PASS. A gate whose
input is unknown is "NOT EVALUATED" and counts as failing, never as a pass: the run cannot know
the TUI's submit-to-render p95 or the release/rollback/terminal tests, which come from an
optional gates-input JSON file:

    {"submit_to_render_p95_ms": 412.0, "release_protocol": true, "publication_rollback": true,
     "terminal_restoration": true,
     "critical_items": ["<item id violating safety-policy item 2>", ...],
     "critical_violations": ["<rights/privacy/integrity failure found elsewhere>", ...],
     "systems": {"<system>": {<any of the keys above, for that system only>}}}
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mambomeme.errors import BenchmarkError
from mambomeme.evaluation.benchmark import SLICES
from mambomeme.evaluation.score import Components

PASS, FAIL, NOT_EVALUATED = "PASS", "FAIL", "NOT EVALUATED"
CAP = 59.0
EPS = 1e-12  # a mean that is 0.30 in decimal may be 0.29999999999999999 in binary
_TESTS = ("release_protocol", "publication_rollback", "terminal_restoration")
_KEYS = ("submit_to_render_p95_ms", *_TESTS, "critical_items", "critical_violations")


@dataclass(frozen=True)
class GateInputs:
    submit_to_render_p95_ms: float | None = None
    release_protocol: bool | None = None
    publication_rollback: bool | None = None
    terminal_restoration: bool | None = None
    critical_items: frozenset[str] = frozenset()
    critical_violations: tuple[str, ...] = ()


@dataclass(frozen=True)
class Gate:
    name: str
    status: str  # PASS | FAIL | NOT EVALUATED
    value: float | None
    rule: str  # the failing condition, as seeds/000 words it


def load_gate_inputs(path: Path | None, system: str) -> GateInputs:
    """The gate inputs for `system` (top-level values, overridden by "systems"[system])."""
    if path is None:
        return GateInputs()
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise BenchmarkError(f"{path}: cannot read gates input: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise BenchmarkError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from None
    if not isinstance(raw, dict):
        raise BenchmarkError(f"{path}:1: expected a JSON object")
    merged = _checked(raw, f"{path}", allow_systems=True)
    systems = raw.get("systems", {})
    if not isinstance(systems, dict):
        raise BenchmarkError(f"{path}: 'systems' must be an object")
    merged.update(_checked(systems.get(system, {}), f"{path}: systems.{system}", False))
    return GateInputs(
        submit_to_render_p95_ms=merged.get("submit_to_render_p95_ms"),
        release_protocol=merged.get("release_protocol"),
        publication_rollback=merged.get("publication_rollback"),
        terminal_restoration=merged.get("terminal_restoration"),
        critical_items=frozenset(merged.get("critical_items", ())),
        critical_violations=tuple(merged.get("critical_violations", ())),
    )


def _checked(raw: Any, where: str, allow_systems: bool) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise BenchmarkError(f"{where}: expected an object")
    allowed = set(_KEYS) | ({"systems"} if allow_systems else set())
    for key in sorted(set(raw) - allowed):
        raise BenchmarkError(f"{where}: unknown key {key!r} (allowed: {sorted(allowed)})")
    p95 = raw.get("submit_to_render_p95_ms")
    if p95 is not None and (isinstance(p95, bool) or not isinstance(p95, (int, float)) or p95 < 0):
        raise BenchmarkError(f"{where}: 'submit_to_render_p95_ms' must be a number >= 0")
    for key in _TESTS:
        if key in raw and not isinstance(raw[key], bool):
            raise BenchmarkError(f"{where}: {key!r} must be true or false")
    for key in ("critical_items", "critical_violations"):
        value = raw.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise BenchmarkError(f"{where}: {key!r} must be a list of non-empty strings")
    return {k: v for k, v in raw.items() if k != "systems"}


def _at_least(name: str, value: float | None, floor: float, rule: str) -> Gate:
    if value is None:
        return Gate(name, NOT_EVALUATED, None, rule)
    return Gate(name, PASS if value >= floor - EPS else FAIL, value, rule)


def evaluate_gates(c: Components, inputs: GateInputs) -> tuple[Gate, ...]:
    """Every hard gate, the critical one first."""
    critical = c.critical_shown > 0 or bool(inputs.critical_violations)
    slices = [c.slice_ndcg.get(s) for s in SLICES]
    lowest = None if any(v is None for v in slices) else min(v for v in slices if v is not None)
    gates = [
        Gate(
            "critical_violation",
            FAIL if critical else PASS,
            c.critical_shown + len(inputs.critical_violations),
            "a critical safety, rights, privacy or artifact-integrity violation (score 0)",
        ),
        _at_least("slice_ndcg", lowest, 0.30, "a required primary slice has nDCG@10 below 0.30"),
        _at_least("exact_mrr", c.E, 0.60, "ExactMRR@10 is below 0.60"),
        _at_least("hit10", c.hit10, 0.70, "answerable Hit@10 is below 0.70"),
        _at_least("correct_empty", c.correct_empty, 0.60, "CorrectEmpty is below 0.60"),
        _at_least(
            "safety_hit10", c.safety_hit10, 0.70, "answerable safety-slice Hit@10 is below 0.70"
        ),
        _safe_list(c),
        _below(
            "submit_to_render_p95",
            inputs.submit_to_render_p95_ms,
            1000.0,
            "submit-to-render p95 is at least 1,000 ms",
        ),
        Gate(
            "error_rate",
            PASS if c.error_rate < 0.01 else FAIL,
            c.error_rate,
            "request error/timeout rate is at least 1%",
        ),
    ]
    for name in _TESTS:
        result = getattr(inputs, name)
        status = NOT_EVALUATED if result is None else (PASS if result else FAIL)
        gates.append(Gate(name, status, None, f"the {name.replace('_', ' ')} tests fail"))
    return tuple(gates)


def _safe_list(c: Components) -> Gate:
    """Both subset rates must reach 0.98 (the stricter reading of 'safe-list rate')."""
    rates = [r for r in (c.safe_ordinary, c.safe_safety) if r is not None]
    rule = "safe-list rate (ordinary or safety subset) is below 0.98"
    return _at_least("safe_list", min(rates) if rates else None, 0.98, rule)


def _below(name: str, value: float | None, ceiling: float, rule: str) -> Gate:
    if value is None:
        return Gate(name, NOT_EVALUATED, None, rule)
    return Gate(name, PASS if value < ceiling else FAIL, value, rule)


def final_score(c: Components, gates: tuple[Gate, ...]) -> tuple[float, str]:
    """(score, status): 0/FAIL on a critical violation, capped at 59/FAIL when any gate fails."""
    if any(g.name == "critical_violation" and g.status != PASS for g in gates):
        return 0.0, FAIL
    if any(g.status != PASS for g in gates):
        return min(c.mmts_raw, CAP), FAIL
    return c.mmts_raw, PASS


def passes_all(gates: tuple[Gate, ...]) -> bool:
    return all(g.status == PASS for g in gates)
