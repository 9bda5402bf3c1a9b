"""The semantic-search acceptance rule of seeds/000: keep the dense route, or ship BM25 alone.

Keep the dense route in the default (hybrid) only if hybrid improves over BM25 by either
  - at least +0.03 absolute overall nDCG@10 (Q, the macro-slice mean), or
  - at least +0.05 nDCG@10 on the semantic-concept slice,
with a paired-bootstrap 95% interval of that difference whose lower bound is above zero, AND no
hard-gate regression (a gate BM25 passes that hybrid does not), AND no entity or quote nDCG@10
regression greater than 0.02. Otherwise ship BM25 alone and keep the negative result in the
report. The decision is official only on a hidden, non-provisional, unexposed benchmark.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mambomeme.evaluation.benchmark import BenchmarkInfo
from mambomeme.evaluation.bootstrap import Interval
from mambomeme.evaluation.gates import PASS, Gate
from mambomeme.evaluation.score import Components

KEEP = "keep the dense route in the default (hybrid)"
SHIP_BM25 = "ship BM25 alone"
MIN_OVERALL_GAIN = 0.03
MIN_CONCEPT_GAIN = 0.05
MAX_EXACT_SLICE_LOSS = 0.02
EPS = 1e-12  # thresholds compare decimals computed in binary floating point (0.58 - 0.60)


@dataclass(frozen=True)
class Check:
    name: str
    passed: bool
    detail: str


@dataclass(frozen=True)
class Decision:
    keep_dense: bool
    decision: str
    official: bool
    checks: tuple[Check, ...]


def _gain_check(name: str, delta: float | None, ci: Interval | None, minimum: float) -> Check:
    low = None if ci is None else ci.low
    passed = delta is not None and low is not None and delta >= minimum - EPS and low > 0
    shown = "undefined" if delta is None else f"{delta:+.4f}"
    bound = "undefined" if low is None else f"{low:+.4f}"
    return Check(
        name, passed, f"delta {shown} (needs >= +{minimum}), 95% CI lower bound {bound} (needs > 0)"
    )


def _delta(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def decide(
    info: BenchmarkInfo,
    bm25: Components,
    hybrid: Components,
    bm25_gates: tuple[Gate, ...],
    hybrid_gates: tuple[Gate, ...],
    differences: Mapping[str, Interval],
) -> Decision:
    """Apply the rule; `differences` are the bootstrap intervals of hybrid - bm25 by metric."""
    overall = _gain_check(
        "overall nDCG@10 gain", _delta(hybrid.Q, bm25.Q), differences.get("Q"), MIN_OVERALL_GAIN
    )
    concept = _gain_check(
        "concept-slice nDCG@10 gain",
        _delta(hybrid.slice_ndcg.get("concept"), bm25.slice_ndcg.get("concept")),
        differences.get("ndcg_concept"),
        MIN_CONCEPT_GAIN,
    )
    improvement = Check(
        "improvement (overall or concept)",
        overall.passed or concept.passed,
        f"overall: {overall.detail}; concept: {concept.detail}",
    )
    hybrid_status = {g.name: g.status for g in hybrid_gates}
    regressed = [
        g.name for g in bm25_gates if g.status == PASS and hybrid_status.get(g.name) != PASS
    ]
    gates = Check(
        "no hard-gate regression",
        not regressed,
        "none" if not regressed else "BM25 passes but hybrid does not: " + ", ".join(regressed),
    )
    slice_checks = []
    for name in ("entity", "quote"):
        delta = _delta(hybrid.slice_ndcg.get(name), bm25.slice_ndcg.get(name))
        passed = delta is not None and delta >= -MAX_EXACT_SLICE_LOSS - EPS
        shown = "undefined" if delta is None else f"{delta:+.4f}"
        slice_checks.append(
            Check(
                f"no {name} nDCG@10 regression > {MAX_EXACT_SLICE_LOSS}", passed, f"delta {shown}"
            )
        )
    checks = (improvement, overall, concept, gates, *slice_checks)
    keep = improvement.passed and gates.passed and all(c.passed for c in slice_checks)
    official = info.partition == "hidden" and not info.provisional and not info.exposed
    return Decision(keep, KEEP if keep else SHIP_BM25, official, checks)
