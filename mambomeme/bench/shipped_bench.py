"""The shipped system end to end, lap by lap, against the routes it runs (issue 36).

The shipped system is what a user is served (search/shipped.py: the corpus's frozen selection,
its usefulness model included). Its `timings_ms` laps split a request into the routes'
retrieval (`encode` the query, then the `lexical`, `typo` and `dense` routes) and the system
around them (`normalise`, `fuse`, `join`, `usefulness`, `abstain`, `rerank`). Reported per lap:
p50/p95/mean and its share of the mean end-to-end time. The issue's profile target:

    shipped end-to-end p95 <= SHIPPED_OVER_ROUTES x (sum over route laps of the lap's p95)

and, separately, the plain `hybrid` system's end-to-end p95 against HYBRID_P95_MS.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from mambomeme.bench.timing import percentiles, timed

ROUTE_LAPS = ("encode", "lexical", "typo", "dense")  # retrieval; every other lap is the system
SHIPPED_OVER_ROUTES = 2.0
HYBRID_P95_MS = {"memes-10k": 8.0, "memes-full": 40.0}  # issue 36 (plain hybrid, end to end)


def measure(
    search: Callable[[str], dict[str, float]],
    queries: Sequence[str],
    warmup: int,
) -> dict[str, Any]:
    """End to end and per lap over `queries`; `search(query)` runs one request and returns
    its timings_ms."""
    laps: list[dict[str, float]] = []

    def one(query: str) -> None:
        laps.append(search(query))

    samples = timed(one, queries, warmup)
    laps = laps[-len(queries) :]  # the warm-up calls' laps are not samples
    names = sorted({k for lap in laps for k in lap if k != "total"})
    breakdown = {k: percentiles([lap.get(k, 0.0) for lap in laps]) for k in names}
    total_mean = max(sum(lap.get("total", 0.0) for lap in laps) / len(laps), 1e-9)
    shares = {k: round(breakdown[k]["mean"] / total_mean, 3) for k in names}
    routes_p95 = round(sum(breakdown[k]["p95"] for k in ROUTE_LAPS if k in breakdown), 3)
    return {
        "end_to_end": percentiles(samples),
        "timings_ms": breakdown,
        "share_of_mean": shares,
        "routes_p95_sum_ms": routes_p95,
    }


def targets(report: dict[str, Any]) -> dict[str, Any]:
    """Issue 36's two latency targets where the report has the figures."""
    out: dict[str, Any] = {}
    shipped = report.get("shipped")
    if isinstance(shipped, dict):
        value = shipped["end_to_end"]["p95"]
        limit = round(SHIPPED_OVER_ROUTES * shipped["routes_p95_sum_ms"], 3)
        out["shipped_p95_vs_routes"] = {"value": value, "target": limit, "met": value <= limit}
    limit_ms = HYBRID_P95_MS.get(str(report["corpus"]))
    if limit_ms is not None:
        value = report["hybrid"]["end_to_end"]["p95"]
        out["hybrid_p95_ms_issue36"] = {
            "value": value,
            "target": limit_ms,
            "met": value <= limit_ms,
        }
    return out
