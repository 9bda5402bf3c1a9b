"""The opening of the scorecard: what ships and why, which gates fail, the headline numbers,
and a glossary of the score's parts (seeds/000; formulas as evaluation/score.py computes them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mambomeme.evaluation.acceptance import Decision
from mambomeme.evaluation.gates import CAP, PASS
from mambomeme.evaluation.score import ERROR_ZERO_RATE, LATENCY_FULL_MS, LATENCY_ZERO_MS, WEIGHTS
from mambomeme.evaluation.scorecard_types import Scorecard

SERVED = "shipped"  # the run of the frozen selection as served (stage run_shipped)


def _f(value: Any, digits: int = 4) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def shipped_system(card: Scorecard) -> str | None:
    """The base system the acceptance decision ships: hybrid if it keeps the dense route, else
    bm25; None when no decision was made (no bm25 or no hybrid run)."""
    if card.acceptance is None:
        return None
    return "hybrid" if card.acceptance.keep_dense else "bm25"


def _why(acceptance: Decision) -> str:
    failed = [c.name for c in acceptance.checks if not c.passed]
    checks = acceptance.checks
    improvement = next((c for c in checks if c.name.startswith("improvement")), None)
    if acceptance.keep_dense:
        gains = [c.name for c in acceptance.checks if c.passed and c.name.endswith("gain")]
        return (
            f"hybrid beats bm25 on {' and '.join(gains) or 'the required gain'} with a 95% "
            "interval above zero, with no hard-gate regression and no entity or quote "
            "regression over 0.02"
        )
    if improvement is not None and not improvement.passed:
        return f"hybrid does not improve on bm25 by the required margin: {improvement.detail}"
    return "hybrid fails the acceptance checks " + ", ".join(failed)


def _headline_rows(card: Scorecard, names: Sequence[str]) -> list[str]:
    by_name = {row.system: row for row in card.systems}
    lines = [
        "| system | MMTS | status | Q | Hit@10 | CorrectEmpty | safe-list (ordinary) "
        "| safe-list (safety subset) |",
        "| --- " * 8 + "|",
    ]
    for name in names:
        row = by_name.get(name)
        if row is None:
            continue
        lines.append(
            f"| {name} | {row.mmts:.2f} | {row.status} | {_f(row.components.Q)} | "
            f"{_f(row.coverage.hit10)} | {_f(row.coverage.correct_empty)} | "
            f"{_f(row.safety.ordinary)} | {_f(row.safety.safety_subset)} |"
        )
    return lines


def _gate_failures(card: Scorecard) -> list[str]:
    """One line per gate that some system does not pass, naming those systems (and values)."""
    failing: dict[tuple[str, str], list[str]] = {}
    for row in card.systems:
        for gate in row.gates:
            if gate.status != PASS:
                value = "" if gate.value is None else f" ({gate.value:.3f})"
                failing.setdefault((gate.name, gate.status), []).append(f"{row.system}{value}")
    if not failing:
        return ["Every system passes every hard gate."]
    lines = [f"Hard gates not passed (each caps that system at {CAP:.0f} and marks it FAIL):", ""]
    for (name, status), systems in failing.items():
        lines.append(f"- `{name}` {status}: {', '.join(systems)}")
    passing = [row.system for row in card.systems if all(g.status == PASS for g in row.gates)]
    lines += ["", f"Every gate passes for: {', '.join(passing) if passing else 'no system'}."]
    return lines


def summary_lines(card: Scorecard) -> list[str]:
    """## Summary: the decision, the headline numbers of what ships, the failing gates."""
    lines = ["", "## Summary", ""]
    acceptance = card.acceptance
    ships = shipped_system(card)
    if acceptance is None or ships is None:
        lines.append(
            "**No acceptance decision**: it needs both a `bm25` and a `hybrid` run, so this "
            "scorecard does not say which system ships."
        )
    else:
        official = (
            "official"
            if acceptance.official
            else "not official: only a hidden, final, unexposed benchmark decides"
        )
        lines.append(
            f"**Ships: `{ships}`** (acceptance decision: {acceptance.decision}; {official}). "
            f"Why: {_why(acceptance)}."
        )
    names = [n for n in (ships, SERVED) if n is not None]
    by_name = {row.system for row in card.systems}
    served = card.row(SERVED)
    if served is not None:
        engine_system = served.run_meta.get("engine_system")
        what = f"`{engine_system}` with " if engine_system else ""
        lines += [
            "",
            f"`{SERVED}` is the frozen dev selection as users get it: {what}the tuned routes, "
            "RRF k, thresholds and abstention of selection.json (what `mambomeme search` and the "
            "TUI serve for this build).",
        ]
    if any(n in by_name for n in names):
        lines += ["", *_headline_rows(card, names)]
    lines += ["", *_gate_failures(card)]
    return lines


def glossary_lines() -> list[str]:
    """## Glossary: the components of MMTS-Search-v1 and the cap, as seeds/000 defines them."""
    w = WEIGHTS
    full, zero = LATENCY_FULL_MS, LATENCY_ZERO_MS
    return [
        "",
        "## Glossary",
        "",
        "- **MMTS** (MMTS-Search-v1, 0-100) = 100 * ("
        + " + ".join(f"{w[c]:.2f} {c}" for c in ("Q", "E", "C", "S", "L", "R"))
        + "); *raw* is this before the gates.",
        "- **Q** (relevance): the mean over the answerable primary slices of the mean nDCG@10 "
        "within the slice (gain 2^grade - 1; unjudged items count as grade 0; an empty or "
        "failed answer to an answerable query scores 0; no-match queries are left out).",
        "- **E** (exact findability, ExactMRR@10): the mean over entity and quote queries of "
        "1 / rank of the first exact-target item or group, 0 when none is in the top 10.",
        "- **C** (coverage) = 2 * Hit@10 * CorrectEmpty / (Hit@10 + CorrectEmpty), 0 when the "
        "denominator is 0. **Hit@10**: the share of answerable queries with a grade >= 2 "
        "result in the top 10. **CorrectEmpty**: the share of no-match queries answered with "
        "an empty list.",
        "- **S** (safety): the mean of the safe-list rates of ordinary queries and of the "
        "safety/adversarial subset; a list is safe when every item shown satisfies the frozen "
        "safety policy (an empty list is safe).",
        f"- **L** (latency) = clip(({zero:.0f} - p95 ms) / ({zero:.0f} - {full:.0f})): full "
        f"credit at {full:.0f} ms or faster, 0 at {zero:.0f} ms (nearest-rank p95 of the "
        "per-query search time).",
        f"- **R** (reliability) = clip(1 - error rate / {ERROR_ZERO_RATE}): full credit with "
        f"no errors, 0 at {ERROR_ZERO_RATE:.0%}; an errored query gets no credit anywhere.",
        f"- **The cap**: a critical safety, rights, privacy or artifact-integrity violation "
        f"scores 0 (FAIL); otherwise a system that does not pass every hard gate (a gate NOT "
        f"EVALUATED counts as not passed) is capped at {CAP:.0f} and marked FAIL.",
        "- clip(x) = min(1, max(0, x)).",
    ]
