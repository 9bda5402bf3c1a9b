"""Lists cut by usefulness: how the engine turns P(grade >= 2) per candidate into a list.

With a usefulness model (models/usefulness/, frozen in the selection) the engine ranks a
permissive fused list of `pool` candidates (every route of the system searched, no per-route
evidence threshold) and then:
  1. exact identity matches first (search/exact.py tiers: a named template, a quoted caption,
     another exact match), every other candidate after them;
  2. within each tier, by the model's order score (the learned ranker's, or P(useful), or the
     fused order: whichever won in training; ties: the fused order);
  3. a candidate is shown when P >= item_threshold or it is an exact match;
  4. the list is empty when the best P is below empty_threshold and no candidate is exact:
     the no-match decision reads every route's evidence, so no single route's silence
     decides "empty";
  5. risk-aware (search.risk, `RiskRule`): a candidate the safety model finds risky but did
     not mask ranks as if less useful and never pads a list's tail.
The thresholds are chosen on the dev benchmark's tune side (models/usefulness/train.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mambomeme.models.usefulness.features import CandidateEvidence
from mambomeme.models.usefulness.model import UsefulnessModel
from mambomeme.search.results import Result

NOT_EXACT = 3


@dataclass(frozen=True)
class RiskRule:
    """Risk-aware lists (search.risk): a candidate whose P(unsafe) is at least `low` (below the
    mask's threshold, else it would be masked) is risky. A risky candidate loses to any
    safe-looking one nearly as useful (P(useful) within `margin` of its own): it waits below
    them; and a list never ends on risky candidates: those still waiting at the end are left
    out. An exact match keeps its place."""

    low: float
    margin: float


def useful_list(
    results: Sequence[Result],
    evidence: Sequence[CandidateEvidence],
    probability: np.ndarray,
    item_threshold: float,
    empty_threshold: float,
    limit: int,
    risk: np.ndarray | None = None,
    rule: RiskRule | None = None,
    order_score: np.ndarray | None = None,
) -> tuple[list[Result], str]:
    """The shown list (ranks renumbered) and, when it is empty, why. `order_score` orders
    (higher first; None: P(useful)); `risk`: each candidate's P(unsafe), read with `rule`."""
    if not results:
        return [], "no candidate"
    exact = [e.exact_tier < NOT_EXACT for e in evidence]
    best = float(probability.max())
    if best < empty_threshold and not any(exact):
        return [], f"no good match (best P(useful) {best:.3f} < {empty_threshold:.3f})"
    score = probability if order_score is None else order_score
    order = sorted(range(len(results)), key=lambda i: (evidence[i].exact_tier, -score[i], i))
    eligible = [i for i in order if exact[i] or probability[i] >= item_threshold]
    if rule is not None and risk is not None:
        eligible = _risk_aware(eligible, exact, probability, risk, rule)
    keep = eligible[:limit]
    shown = [dataclasses.replace(results[i], rank=n) for n, i in enumerate(keep, start=1)]
    return shown, "" if shown else "no candidate was useful enough"


def _risk_aware(
    order: Sequence[int],
    exact: Sequence[bool],
    probability: np.ndarray,
    risk: np.ndarray,
    rule: RiskRule,
) -> list[int]:
    """`order` with each risky candidate waiting below every safe one nearly as useful; those
    still waiting at the end are dropped (RiskRule)."""
    out: list[int] = []
    waiting: list[int] = []
    for i in order:
        if not exact[i] and risk[i] >= rule.low:
            waiting.append(i)
            continue
        released = [r for r in waiting if probability[r] > probability[i] + rule.margin]
        out.extend(released)
        waiting = [r for r in waiting if r not in released]
        out.append(i)
    return out


def apply_model(
    model: UsefulnessModel,
    results: Sequence[Result],
    evidence: Sequence[CandidateEvidence],
    x: np.ndarray,
    limit: int,
    risk: np.ndarray | None = None,
    rule: RiskRule | None = None,
) -> tuple[list[Result], str, np.ndarray]:
    """The model's probabilities and order scores for `x`, then `useful_list`."""
    p = model.probability(x) if len(x) else np.zeros(0)
    score = model.order_scores(x, p) if len(x) else np.zeros(0)
    shown, reason = useful_list(
        results, evidence, p, model.item_threshold, model.empty_threshold, limit, risk, rule,
        score,
    )  # fmt: skip
    return shown, reason, p
