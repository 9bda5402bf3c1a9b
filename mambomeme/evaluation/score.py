"""From a run to the MMTS-Search-v1 components (seeds/000): per-query outcomes, then aggregates.

`evaluate_run` turns each benchmark query into one `QueryOutcome` (an errored query gets zero
relevance, exactness, coverage and safety credit). `aggregate` turns outcomes into `Components`
under per-query weights: all ones for the point estimate, family-resample counts for the
bootstrap, so both use the same code.

    Q  = mean over the answerable primary slices of (mean nDCG@10 within the slice)
    E  = mean ExactRR over answerable entity and quote queries
    C  = 2 * Hit@10 * CorrectEmpty / (Hit@10 + CorrectEmpty), 0 when the denominator is 0
    S  = mean(safe-list rate of ordinary queries, safe-list rate of safety-subset queries)
    L  = clip((1000 - p95 latency ms) / (1000 - 200))
    R  = clip(1 - error rate / 0.01)
    MMTS-Search-v1 = 100 * (0.55 Q + 0.15 E + 0.10 C + 0.10 S + 0.05 L + 0.05 R)

p95 is the nearest-rank percentile (the smallest latency with at least 95% of queries at or
below it). A component with no queries to average over is None in reports and 0 in the score.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mambomeme.evaluation import metrics
from mambomeme.evaluation.benchmark import EXACT_SLICES, SLICES, Benchmark
from mambomeme.evaluation.runs import Run

WEIGHTS = {"Q": 0.55, "E": 0.15, "C": 0.10, "S": 0.10, "L": 0.05, "R": 0.05}
LATENCY_FULL_MS = 200.0
LATENCY_ZERO_MS = 1000.0
ERROR_ZERO_RATE = 0.01

Array = npt.NDArray[np.float64]


@dataclass(frozen=True)
class QueryOutcome:
    qid: str
    family: str
    slice: str
    answerable: bool
    safety_subset: bool
    errored: bool
    shown: int  # results returned (0 for an error)
    ndcg: float
    exact_rr: float | None  # None outside answerable entity/quote queries
    hit1: float
    hit5: float
    hit10: float
    recall10: float
    rr10: float
    safe: bool  # False for an error: no safety credit
    unjudged_safety: int  # shown items without a safety.tsv label
    unjudged_top10: tuple[str, ...]  # shown items without a qrels row for this query
    critical: tuple[str, ...]  # shown items on the critical list (safety-policy item 2)
    latency_ms: float


def evaluate_run(
    benchmark: Benchmark, run: Run, critical_items: frozenset[str] = frozenset()
) -> list[QueryOutcome]:
    """One outcome per benchmark query, in benchmark order."""
    outcomes = []
    for query in benchmark.queries:
        qrels = benchmark.qrels.get(query.qid, {})
        errored = query.qid in run.errors
        ranking = () if errored else run.rankings.get(query.qid, ())
        fallback = {d.item_id: d.safety for d in run.details.get(query.qid, ()) if d.safety}
        safe, unjudged_safety = metrics.safe_list(ranking, benchmark.safety, fallback)
        in_exact = query.answerable and query.slice in EXACT_SLICES
        groups = benchmark.exact.get(query.qid, ())
        outcomes.append(
            QueryOutcome(
                qid=query.qid,
                family=query.family,
                slice=query.slice,
                answerable=query.answerable,
                safety_subset="safety" in query.subsets,
                errored=errored,
                shown=len(ranking),
                ndcg=metrics.ndcg(ranking, qrels),
                exact_rr=metrics.exact_rr(ranking, groups) if in_exact else None,
                hit1=metrics.hit(ranking, qrels, 1),
                hit5=metrics.hit(ranking, qrels, 5),
                hit10=metrics.hit(ranking, qrels, 10),
                recall10=metrics.recall(ranking, qrels),
                rr10=metrics.reciprocal_rank(ranking, qrels),
                safe=safe and not errored,
                unjudged_safety=unjudged_safety,
                unjudged_top10=tuple(i for i in ranking[: metrics.CUTOFF] if i not in qrels),
                critical=tuple(i for i in ranking if i in critical_items),
                latency_ms=run.latency_ms[query.qid],
            )
        )
    return outcomes


@dataclass(frozen=True)
class OutcomeTable:
    """Outcomes as parallel numpy arrays, so a resample is one weight vector."""

    slice_masks: Mapping[str, npt.NDArray[np.bool_]]  # answerable queries of each slice
    answerable: npt.NDArray[np.bool_]
    no_match: npt.NDArray[np.bool_]
    exact_scope: npt.NDArray[np.bool_]
    safety_subset: npt.NDArray[np.bool_]
    answerable_safety: npt.NDArray[np.bool_]
    errored: Array
    empty: Array  # returned an empty list without error
    ndcg: Array
    exact_rr: Array
    hit10: Array
    safe: Array
    critical: Array
    latency_ms: Array

    @staticmethod
    def of(outcomes: Sequence[QueryOutcome]) -> OutcomeTable:
        def floats(values: Sequence[float]) -> Array:
            return np.asarray(values, dtype=np.float64)

        answerable = np.array([o.answerable for o in outcomes], dtype=bool)
        safety = np.array([o.safety_subset for o in outcomes], dtype=bool)
        return OutcomeTable(
            slice_masks={
                s: np.array([o.slice == s for o in outcomes], dtype=bool) & answerable
                for s in SLICES
            },
            answerable=answerable,
            no_match=~answerable,
            exact_scope=np.array([o.exact_rr is not None for o in outcomes], dtype=bool),
            safety_subset=safety,
            answerable_safety=safety & answerable,
            errored=floats([float(o.errored) for o in outcomes]),
            empty=floats([float(o.shown == 0 and not o.errored) for o in outcomes]),
            ndcg=floats([o.ndcg for o in outcomes]),
            exact_rr=floats([o.exact_rr or 0.0 for o in outcomes]),
            hit10=floats([o.hit10 for o in outcomes]),
            safe=floats([float(o.safe) for o in outcomes]),
            critical=floats([float(len(o.critical)) for o in outcomes]),
            latency_ms=floats([o.latency_ms for o in outcomes]),
        )


@dataclass(frozen=True)
class Components:
    slice_ndcg: Mapping[str, float | None]
    Q: float | None
    E: float | None
    hit10: float | None
    correct_empty: float | None
    C: float
    safe_ordinary: float | None
    safe_safety: float | None
    S: float | None
    safety_hit10: float | None  # answerable safety-subset Hit@10 (a gate)
    latency_p95_ms: float | None
    L: float
    error_rate: float
    R: float
    critical_shown: float  # count of critical items shown (weighted)
    mmts_raw: float  # before gates


def clip(x: float) -> float:
    """clip(x) = min(1, max(0, x))."""
    return min(1.0, max(0.0, x))


def weighted_mean(values: Array, weights: Array, mask: npt.NDArray[np.bool_]) -> float | None:
    total = float(weights[mask].sum())
    return float((values[mask] * weights[mask]).sum()) / total if total > 0 else None


def weighted_p95(values: Array, weights: Array) -> float | None:
    """Nearest-rank 95th percentile of `values` repeated `weights` times."""
    keep = weights > 0
    if not keep.any():
        return None
    order = np.argsort(values[keep], kind="stable")
    sorted_values, cumulative = values[keep][order], np.cumsum(weights[keep][order])
    rank = math.ceil(0.95 * float(cumulative[-1]) - 1e-9)
    return float(sorted_values[int(np.searchsorted(cumulative, rank - 1e-9))])


def aggregate(table: OutcomeTable, weights: Array | None = None) -> Components:
    """Every component under per-query `weights` (default: each query once)."""
    w = np.ones(len(table.ndcg)) if weights is None else np.asarray(weights, dtype=np.float64)
    everyone = np.ones(len(w), dtype=bool)
    slice_ndcg = {s: weighted_mean(table.ndcg, w, m) for s, m in table.slice_masks.items()}
    present = [v for v in slice_ndcg.values() if v is not None]
    q = sum(present) / len(present) if present else None
    e = weighted_mean(table.exact_rr, w, table.exact_scope)
    hit10 = weighted_mean(table.hit10, w, table.answerable)
    correct_empty = weighted_mean(table.empty, w, table.no_match)
    h, ce = hit10 or 0.0, correct_empty or 0.0
    c = 2 * h * ce / (h + ce) if h + ce > 0 else 0.0
    safe_ordinary = weighted_mean(table.safe, w, ~table.safety_subset)
    safe_safety = weighted_mean(table.safe, w, table.safety_subset)
    rates = [r for r in (safe_ordinary, safe_safety) if r is not None]
    s = sum(rates) / len(rates) if rates else None
    p95 = weighted_p95(table.latency_ms, w)
    latency = (
        clip((LATENCY_ZERO_MS - p95) / (LATENCY_ZERO_MS - LATENCY_FULL_MS))
        if p95 is not None
        else 0.0
    )
    error_rate = weighted_mean(table.errored, w, everyone) or 0.0
    r = clip(1.0 - error_rate / ERROR_ZERO_RATE)
    parts = {"Q": q or 0.0, "E": e or 0.0, "C": c, "S": s or 0.0, "L": latency, "R": r}
    mmts = 100.0 * sum(WEIGHTS[name] * value for name, value in parts.items())
    return Components(
        slice_ndcg=slice_ndcg,
        Q=q,
        E=e,
        hit10=hit10,
        correct_empty=correct_empty,
        C=c,
        safe_ordinary=safe_ordinary,
        safe_safety=safe_safety,
        S=s,
        safety_hit10=weighted_mean(table.hit10, w, table.answerable_safety),
        latency_p95_ms=p95,
        L=latency,
        error_rate=error_rate,
        R=r,
        critical_shown=float((table.critical * w).sum()),
        mmts_raw=mmts,
    )


def slice_diagnostics(outcomes: Sequence[QueryOutcome]) -> dict[str, dict[str, float | int]]:
    """Per slice (answerable queries): nDCG@10, Hit@1/5/10, Recall@10, MRR@10 and the count."""
    table: dict[str, dict[str, float | int]] = {}
    for name in SLICES:
        rows = [o for o in outcomes if o.answerable and o.slice == name]
        if not rows:
            continue
        n = len(rows)
        table[name] = {
            "queries": n,
            "ndcg@10": sum(o.ndcg for o in rows) / n,
            "hit@1": sum(o.hit1 for o in rows) / n,
            "hit@5": sum(o.hit5 for o in rows) / n,
            "hit@10": sum(o.hit10 for o in rows) / n,
            "recall@10": sum(o.recall10 for o in rows) / n,
            "mrr@10": sum(o.rr10 for o in rows) / n,
        }
    return table
