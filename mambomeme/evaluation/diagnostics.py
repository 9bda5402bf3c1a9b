"""Diagnostics reported next to the score but never scored (seeds/000 "Safety and duplicate
diagnostics"): duplicates, repeated template groups, missing preview or attribution, which route
family found each shown result by slice, and unjudged items in the top 10.

Rates are over all shown results of the run (errored queries show nothing). A result counts as
a duplicate / repeated group when an earlier result of the same list has the same duplicate key
/ template group. Routes: a route whose scores are meaning (search/routes: Signal.MEANING, the
dense route) is semantic; every other route name (lexical, typo, an old run's fuzzy) is lexical.
Diagnostics that need the details sidecar are None when a run has none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mambomeme.evaluation.benchmark import Benchmark
from mambomeme.evaluation.runs import Run
from mambomeme.evaluation.score import QueryOutcome
from mambomeme.search.routes import signal_of
from mambomeme.search.routes.base import Signal


def _rate(count: int, total: int) -> float | None:
    return count / total if total else None


def diagnostics(benchmark: Benchmark, run: Run, outcomes: Sequence[QueryOutcome]) -> dict[str, Any]:
    shown = sum(o.shown for o in outcomes)
    unjudged = [(o.qid, item) for o in outcomes for item in o.unjudged_top10]
    report: dict[str, Any] = {
        "shown_results": shown,
        "errored_queries": sum(o.errored for o in outcomes),
        "empty_answerable_queries": sum(
            o.answerable and o.shown == 0 and not o.errored for o in outcomes
        ),
        "unjudged_top10_count": len(unjudged),
        "unjudged_top10_rate": _rate(len(unjudged), shown),
        "unjudged_top10": [{"qid": q, "item_id": i} for q, i in unjudged],
        "safety_from_corpus_count": sum(o.unjudged_safety for o in outcomes),
    }
    has_details = bool(run.details) or shown == 0
    if not has_details:
        report.update(
            {
                k: None
                for k in (
                    "duplicate_rate",
                    "template_repeat_rate",
                    "missing_preview_rate",
                    "missing_attribution_rate",
                    "routes_by_slice",
                )
            }
        )
        return report
    duplicates = repeats = no_preview = no_attribution = 0
    slice_of = {q.qid: q.slice for q in benchmark.queries}
    routes: dict[str, dict[str, int]] = {}
    for qid, details in run.details.items():
        keys: set[str] = set()
        groups: set[str] = set()
        counts = routes.setdefault(
            slice_of[qid], {"lexical_only": 0, "dense_only": 0, "both": 0, "none": 0}
        )
        for d in details:
            duplicates += d.duplicate_key in keys
            repeats += bool(d.template_group) and d.template_group in groups
            keys.add(d.duplicate_key)
            groups.add(d.template_group)
            no_preview += not d.preview.strip()
            no_attribution += not d.attribution.strip()
            dense = any(signal_of(r) is Signal.MEANING for r in d.routes)
            lexical = any(signal_of(r) is not Signal.MEANING for r in d.routes)
            kind = (
                "both"
                if dense and lexical
                else "dense_only"
                if dense
                else "lexical_only"
                if lexical
                else "none"
            )
            counts[kind] += 1
    report.update(
        {
            "duplicate_rate": _rate(duplicates, shown),
            "template_repeat_rate": _rate(repeats, shown),
            "missing_preview_rate": _rate(no_preview, shown),
            "missing_attribution_rate": _rate(no_attribution, shown),
            "routes_by_slice": routes,
        }
    )
    return report
