"""Interaction metrics over the local events file (`mambomeme feedback report`) and its export.

These numbers are observational: people see and pick what is ranked first (rank and exposure
bias), so they describe use, not relevance, and never replace benchmark judgements.

A *request* is one rendered result list, keyed by (session_id, request_id), counted when at least
one of its events lies inside the window (time_utc >= now - min(--since, 30) days). The TUI writes
an event for every rendered list it leaves (an item action, `reformulate` on the next search, or
`abandon` on quit), so every list shown while feedback was on is seen. Every rate is
count / requests, reported with both numbers; one over fewer than 20 requests is marked "n<20".

- choose@10: requests whose first `choose` has target_rank <= 10 (only `choose` is a selection).
- choose, preview, open, copy rates: requests with at least one event of that action.
- chosen rank: target_rank of the request's first `choose` (by time); the distribution counts
  ranks 1..10 and ">10" over chosen requests.
- mean reciprocal chosen rank (MRR@10 over requests): (1/N) * sum_r 1/rank_r, the term 0 when r
  has no choose or its first choose ranks beyond 10 (the MRR of Voorhees, TREC-8 QA, 1999).
- time to choose: ms_since_render of the first `choose`; median (mean of the middle two when n is
  even) and p90 (nearest rank: the value at position ceil(0.9 n) of the ascending values).
- reformulation: a request with no `choose` followed, within REFORMULATION_WINDOW_S (60 s) of its
  render, by another search in the same session. The TUI logs that next search as a `reformulate`
  event on the earlier request, whose ms_since_render is exactly that gap.
- abandonment: a request with no preview, open, copy or choose before the next search or session
  end. Item events can only name the list on screen, so: no item event at all (a list with no
  results counts as abandoned). The logged `abandon` action ("quit without a choose on the last
  list") marks session end; it is not this rate.

Breakdowns: by retriever_version (system:params hash), dataset_version, interface_version and,
when a benchmark is given, by the slice of the benchmark query whose text (or text | cues) equals
the logged query after `normalise` and casefold. Corrupt lines (invalid UTF-8, invalid JSON, an
event that breaks the schema) are reported by line number and skipped (events.py); nothing here
writes the events file or touches the network.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from mambomeme.corpus.normalise import normalise
from mambomeme.errors import BenchmarkError
from mambomeme.evaluation.benchmark import read_queries
from mambomeme.evaluation.plots import percentile
from mambomeme.feedback.events import LoggedEvent, Selection
from mambomeme.feedback.schema import (
    ITEM_ACTIONS,
    RETENTION_DAYS,
)

REPORT_SCHEMA = "feedback-report-v1"
MIN_REQUESTS = 20
TOP_K = 10
REFORMULATION_WINDOW_S = 60.0
NO_MATCH = "(no benchmark match)"
NO_QUERY = "(query not exported)"
OBSERVATIONAL = (
    "Observational data from local use: rank and exposure biased (people see and pick what is "
    "shown first). These are not benchmark truth and do not replace judged relevance."
)
DEFINITIONS = {
    "request": "one rendered result list (session_id, request_id) with an event in the window",
    "choose_top10": "first choose at rank <= 10 / requests (only choose is a selection)",
    "choose": "requests with a choose at any rank / requests",
    "preview": "requests with at least one preview / requests",
    "open": "requests with at least one open / requests",
    "copy": "requests with at least one copy / requests",
    "reformulation": "no choose and the next search in the session within "
    f"{REFORMULATION_WINDOW_S:g} s of the render (logged reformulate event) / requests",
    "abandonment": "no preview, open, copy or choose before the next search or session end / "
    "requests",
    "mean_reciprocal_chosen_rank": "mean over requests of 1/rank of the first choose "
    "(0 when none or rank > 10)",
    "chosen_rank_distribution": "rank of the first choose, over chosen requests",
    "time_to_choose_ms": "ms from render to the first choose: median, p90 (nearest rank)",
    "too_few": f"n < {MIN_REQUESTS}",
}

# ----- metrics ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rate:
    count: int
    n: int

    @property
    def rate(self) -> float | None:
        return self.count / self.n if self.n else None

    @property
    def too_few(self) -> bool:
        return self.n < MIN_REQUESTS

    def to_dict(self) -> dict[str, Any]:
        return {"count": self.count, "n": self.n, "rate": self.rate, "too_few": self.too_few}


@dataclass(frozen=True)
class Request:
    """What one rendered list led to, derived from its events."""

    session_id: str
    request_id: str
    query: str | None
    dataset: str
    retriever: str
    interface: str
    actions: frozenset[str]
    chosen_rank: int | None  # first choose
    choose_ms: float | None  # first choose
    reformulated: bool

    @property
    def abandoned(self) -> bool:
        return not self.actions & ITEM_ACTIONS


@dataclass(frozen=True)
class GroupMetrics:
    requests: int
    sessions: int
    rates: Mapping[str, Rate]  # choose_top10, choose, preview, open, copy, reformulation, ...
    mean_reciprocal_rank: float
    chosen_ranks: Mapping[str, int]  # "1".."10", ">10"
    choose_n: int
    choose_median_ms: float | None
    choose_p90_ms: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "sessions": self.sessions,
            "rates": {name: rate.to_dict() for name, rate in self.rates.items()},
            "mean_reciprocal_chosen_rank": {
                "value": self.mean_reciprocal_rank,
                "n": self.requests,
                "too_few": self.requests < MIN_REQUESTS,
            },
            "chosen_rank_distribution": dict(self.chosen_ranks),
            "time_to_choose_ms": {
                "median": self.choose_median_ms,
                "p90": self.choose_p90_ms,
                "n": self.choose_n,
                "too_few": self.choose_n < MIN_REQUESTS,
            },
        }


def requests_of(events: Iterable[LoggedEvent]) -> list[Request]:
    """Group time-ordered events into requests, in order of their first event."""
    grouped: dict[tuple[str, str], list[LoggedEvent]] = {}
    for event in events:
        grouped.setdefault((event.session_id, event.request_id), []).append(event)
    requests = []
    for (session, request_id), group in grouped.items():
        first = group[0]
        chooses = [e for e in group if e.action == "choose"]
        chosen = chooses[0] if chooses else None
        requests.append(
            Request(
                session_id=session,
                request_id=request_id,
                query=first.query,
                dataset=first.dataset_version,
                retriever=first.retriever_version,
                interface=first.interface_version,
                actions=frozenset(e.action for e in group),
                chosen_rank=None if chosen is None else chosen.target_rank,
                choose_ms=None if chosen is None else chosen.ms_since_render,
                reformulated=chosen is None
                and any(
                    e.action == "reformulate"
                    and e.ms_since_render <= REFORMULATION_WINDOW_S * 1000.0
                    for e in group
                ),
            )
        )
    return requests


def group_metrics(requests: Sequence[Request]) -> GroupMetrics:
    """The metrics of the module docstring over one group of requests."""
    n = len(requests)

    def count(test: Any) -> Rate:
        return Rate(sum(1 for r in requests if test(r)), n)

    ranks = [r.chosen_rank for r in requests if r.chosen_rank is not None]
    times = sorted(r.choose_ms for r in requests if r.choose_ms is not None)
    distribution = {str(k): ranks.count(k) for k in range(1, TOP_K + 1)}
    distribution[f">{TOP_K}"] = sum(1 for k in ranks if k > TOP_K)
    rates = {
        "choose_top10": count(lambda r: r.chosen_rank is not None and r.chosen_rank <= TOP_K),
        "choose": count(lambda r: r.chosen_rank is not None),
        "preview": count(lambda r: "preview" in r.actions),
        "open": count(lambda r: "open" in r.actions),
        "copy": count(lambda r: "copy" in r.actions),
        "reformulation": count(lambda r: r.reformulated),
        "abandonment": count(lambda r: r.abandoned),
    }
    reciprocal = sum(1 / k for k in ranks if k <= TOP_K)
    return GroupMetrics(
        requests=n,
        sessions=len({r.session_id for r in requests}),
        rates=rates,
        mean_reciprocal_rank=reciprocal / n if n else 0.0,
        chosen_ranks=distribution,
        choose_n=len(times),
        choose_median_ms=statistics.median(times) if times else None,
        choose_p90_ms=percentile(times, 90) if times else None,
    )


@dataclass(frozen=True)
class SliceIndex:
    """Benchmark query texts for the slice breakdown."""

    benchmark: Path
    queries: int
    by_text: Mapping[str, str]  # match_key(text) -> slice


def load_slices(benchmark: Path) -> SliceIndex:
    """Normalised, casefolded query text (and text | cues) -> slice, from queries.jsonl.

    Raises BenchmarkError when the file is missing or invalid. A text that two slices share maps
    to both, joined with "+".
    """
    path = benchmark / "queries.jsonl"
    try:
        queries = read_queries(path)
    except OSError as exc:
        raise BenchmarkError(f"{path}: cannot read the benchmark queries: {exc.strerror}") from exc
    slices: dict[str, set[str]] = {}
    for query in queries:
        for text in {query.text, " | ".join(query.all_cues)}:
            slices.setdefault(match_key(text), set()).add(query.slice)
    by_text = {key: "+".join(sorted(names)) for key, names in slices.items()}
    return SliceIndex(benchmark, len(queries), by_text)


def match_key(text: str) -> str:
    return normalise(text).casefold()


@dataclass(frozen=True)
class FeedbackReport:
    selection: Selection
    generated: datetime
    since_days: int | None
    slices: SliceIndex | None
    slice_note: str  # why there is no slice breakdown, or which benchmark gave it
    overall: GroupMetrics
    breakdowns: Mapping[str, Mapping[str, GroupMetrics]]  # by_retriever, ... -> value -> metrics

    def to_dict(self) -> dict[str, Any]:
        sel = self.selection
        return {
            "schema": REPORT_SCHEMA,
            "observational": OBSERVATIONAL,
            "generated_utc": self.generated.isoformat(timespec="seconds"),
            "window": {
                "start_utc": sel.window_start.isoformat(timespec="seconds"),
                "days": sel.window_days,
                "since_days": self.since_days,
                "retention_days": RETENTION_DAYS,
            },
            "source": {
                "path": str(sel.path),
                "lines": sel.lines,
                "events": len(sel.events),
                "outside_window": sel.outside_window,
                "skipped_lines": [{"line": p.line, "reason": p.reason} for p in sel.problems],
            },
            "benchmark": None
            if self.slices is None
            else {"path": str(self.slices.benchmark), "queries": self.slices.queries},
            "slices_note": self.slice_note,
            "definitions": {**DEFINITIONS, "min_requests": MIN_REQUESTS},
            "overall": self.overall.to_dict(),
            **{
                name: {key: m.to_dict() for key, m in groups.items()}
                for name, groups in self.breakdowns.items()
            },
        }


def build_report(
    selection: Selection,
    now: datetime,
    since_days: int | None = None,
    slices: SliceIndex | None = None,
    slice_note: str = "",
) -> FeedbackReport:
    """Overall metrics and the breakdowns; `slices` from `load_slices` (None: no slice split)."""
    requests = requests_of(selection.events)
    keys: dict[str, Any] = {
        "by_retriever": lambda r: r.retriever,
        "by_dataset": lambda r: r.dataset,
        "by_interface": lambda r: r.interface,
    }
    if slices is not None:
        by_text = slices.by_text
        keys["by_slice"] = lambda r: (
            NO_QUERY if r.query is None else by_text.get(match_key(r.query), NO_MATCH)
        )
    breakdowns: dict[str, dict[str, GroupMetrics]] = {}
    for name, key in keys.items():
        groups: dict[str, list[Request]] = {}
        for request in requests:
            groups.setdefault(key(request), []).append(request)
        breakdowns[name] = {k: group_metrics(groups[k]) for k in sorted(groups)}
    return FeedbackReport(
        selection=selection,
        generated=now,
        since_days=since_days,
        slices=slices,
        slice_note=slice_note
        or (
            "no benchmark given"
            if slices is None
            else f"benchmark {slices.benchmark} "
            f"({slices.queries} queries; matched on normalised, casefolded text)"
        ),
        overall=group_metrics(requests),
        breakdowns=breakdowns,
    )
