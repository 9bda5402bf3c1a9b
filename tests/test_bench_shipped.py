"""The shipped system's lap profile and issue 36's latency targets (bench/shipped_bench.py).
Only the arithmetic is tested: no timing is asserted."""

from __future__ import annotations

from typing import Any

from mambomeme.bench import shipped_bench

LAPS = {"encode": 4.0, "lexical": 1.0, "typo": 1.0, "dense": 2.0, "usefulness": 8.0}


def _measure() -> dict[str, Any]:
    def search(query: str) -> dict[str, float]:
        return {**LAPS, "total": sum(LAPS.values())}

    return shipped_bench.measure(search, ["a", "b", "c"], warmup=1)


def test_laps_shares_and_the_routes_sum() -> None:
    report = _measure()
    assert report["end_to_end"]["n"] == 3
    assert report["timings_ms"]["usefulness"]["p95"] == 8.0
    assert report["share_of_mean"] == {
        "dense": 0.125,
        "encode": 0.25,
        "lexical": 0.062,
        "typo": 0.062,
        "usefulness": 0.5,
    }
    assert report["routes_p95_sum_ms"] == 8.0  # encode + lexical + typo + dense


def test_targets_compare_end_to_end_with_twice_the_routes_and_hybrid_with_its_limit() -> None:
    shipped = _measure()
    shipped["end_to_end"] = {"p95": 17.0}
    report = {"corpus": "memes-10k", "shipped": shipped, "hybrid": {"end_to_end": {"p95": 7.5}}}
    out = shipped_bench.targets(report)
    assert out["shipped_p95_vs_routes"] == {"value": 17.0, "target": 16.0, "met": False}
    assert out["hybrid_p95_ms_issue36"] == {"value": 7.5, "target": 8.0, "met": True}
    report["corpus"] = "fixture"
    del report["shipped"]
    assert shipped_bench.targets(report) == {}
