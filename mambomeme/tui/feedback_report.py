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
event that breaks the schema) are reported by line number and skipped; nothing here writes the
events file or touches the network.
"""

from __future__ import annotations

import io
import json
import math
import os
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from mambomeme.corpus.normalise import normalise
from mambomeme.errors import BenchmarkError
from mambomeme.evaluation.benchmark import read_queries
from mambomeme.evaluation.plots import percentile
from mambomeme.tui.feedback import (
    ACTIONS,
    EVENT_SCHEMA_VERSION,
    ITEM_ACTIONS,
    RETENTION_DAYS,
    FeedbackError,
    Shown,
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
_STR_FIELDS = (
    "event_id",
    "session_id",
    "time_utc",
    "request_id",
    "action",
    "dataset_version",
    "retriever_version",
    "interface_version",
)


class NoEventsError(FeedbackError):
    """There are no readable events in the window (missing or empty file, all old or corrupt)."""

    def __init__(self, message: str, problems: Sequence[LineProblem] = ()) -> None:
        self.problems = tuple(problems)
        super().__init__(message)


class ExportError(FeedbackError):
    """The export target cannot be written (it exists already, or cannot be created)."""


# ----- reading ------------------------------------------------------------------------------


@dataclass(frozen=True)
class LineProblem:
    line: int
    reason: str


@dataclass(frozen=True)
class LoggedEvent:
    """One valid line of the events file (query is None in an export made without queries)."""

    line: int
    time: datetime
    schema_version: str
    event_id: str
    session_id: str
    time_utc: str
    request_id: str
    query: str | None
    shown: tuple[Shown, ...]
    action: str
    target_id: str | None
    target_rank: int | None
    dataset_version: str
    retriever_version: str
    interface_version: str
    ms_since_render: float

    def to_record(self, with_query: bool) -> dict[str, Any]:
        """The event in the logger's own field layout; query text only when asked for."""
        return {
            "schema_version": self.schema_version,
            "event_id": self.event_id,
            "session_id": self.session_id,
            "time_utc": self.time_utc,
            "request_id": self.request_id,
            "query": self.query if with_query else None,
            "shown": [{"id": s.id, "rank": s.rank} for s in self.shown],
            "action": self.action,
            "target_id": self.target_id,
            "target_rank": self.target_rank,
            "dataset_version": self.dataset_version,
            "retriever_version": self.retriever_version,
            "interface_version": self.interface_version,
            "ms_since_render": self.ms_since_render,
        }


@dataclass(frozen=True)
class Selection:
    """The events of one file inside the window, and what was left out and why."""

    path: Path
    window_start: datetime
    window_days: int
    lines: int  # non-blank lines read
    events: tuple[LoggedEvent, ...]
    outside_window: int
    problems: tuple[LineProblem, ...]


def select_events(path: Path, now: datetime, since_days: int | None = None) -> Selection:
    """Read `path` tolerantly and keep events from the last min(since_days, 30) days.

    Raises NoEventsError (with the line problems) when nothing is left to count.
    """
    if since_days is not None and since_days < 1:
        raise FeedbackError(f"--since: must be at least 1 day, got {since_days}")
    days = RETENTION_DAYS if since_days is None else min(since_days, RETENTION_DAYS)
    start = now - timedelta(days=days)
    if not path.is_file():
        raise NoEventsError(
            f"no events: there is no events file at {path} (feedback is off by "
            "default; turn it on with --feedback or F in the TUI)"
        )
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FeedbackError(f"{path}: cannot read the events file: {exc.strerror}") from exc
    lines, events, problems = 0, [], []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        lines += 1
        try:
            events.append(_parse_line(number, raw))
        except ValueError as exc:
            problems.append(LineProblem(number, str(exc)))
    kept = sorted((e for e in events if e.time >= start), key=lambda e: (e.time, e.line))
    outside = len(events) - len(kept)
    if not kept:
        if lines == 0:
            why = "the file is empty"
        else:
            why = f"{outside} older than {days} days, {len(problems)} unreadable lines"
        raise NoEventsError(f"no events in {path} in the last {days} days ({why})", problems)
    return Selection(path, start, days, lines, tuple(kept), outside, tuple(problems))


def _parse_line(number: int, raw: bytes) -> LoggedEvent:
    """One line to an event, or ValueError with the reason (the caller adds the line number)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"invalid UTF-8 at byte {exc.start}") from exc
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON: {exc.msg} (column {exc.colno})") from exc
    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    if record.get("schema_version") != EVENT_SCHEMA_VERSION:
        raise ValueError(f"schema_version is not {EVENT_SCHEMA_VERSION!r}")
    for key in _STR_FIELDS:
        if not isinstance(record.get(key), str):
            raise ValueError(f"{key!r} missing or not a string")
    try:
        stamp = datetime.fromisoformat(record["time_utc"])
    except ValueError as exc:
        raise ValueError(f"time_utc {record['time_utc']!r} is not an ISO time") from exc
    if stamp.utcoffset() is None:
        raise ValueError("time_utc has no time zone")
    action = record["action"]
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}")
    query = record.get("query")
    if query is not None and not isinstance(query, str):
        raise ValueError("'query' must be a string or null")
    target_id, target_rank = record.get("target_id"), record.get("target_rank")
    if action in ITEM_ACTIONS:
        if not isinstance(target_id, str) or not _is_rank(target_rank):
            raise ValueError(f"action {action!r} needs target_id and a target_rank >= 1")
    elif target_id is not None or target_rank is not None:
        raise ValueError(f"action {action!r} must not name a target")
    ms = record.get("ms_since_render")
    if isinstance(ms, bool) or not isinstance(ms, int | float) or not math.isfinite(ms) or ms < 0:
        raise ValueError("'ms_since_render' must be a number >= 0")
    shown = record.get("shown")
    if not isinstance(shown, list) or not all(
        isinstance(s, dict) and isinstance(s.get("id"), str) and _is_rank(s.get("rank"))
        for s in shown
    ):
        raise ValueError("'shown' must be a list of {id, rank}")
    return LoggedEvent(
        line=number,
        time=stamp,
        schema_version=record["schema_version"],
        event_id=record["event_id"],
        session_id=record["session_id"],
        time_utc=record["time_utc"],
        request_id=record["request_id"],
        query=query,
        shown=tuple(Shown(s["id"], s["rank"]) for s in shown),
        action=action,
        target_id=target_id,
        target_rank=target_rank,
        dataset_version=record["dataset_version"],
        retriever_version=record["retriever_version"],
        interface_version=record["interface_version"],
        ms_since_render=float(ms),
    )


def _is_rank(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


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


# ----- presentation (values only; the command prints) -------------------------------------

_LABELS = {
    "choose_top10": "choose within top 10",
    "choose": "choose (any rank)",
    "preview": "preview",
    "open": "open",
    "copy": "copy",
    "reformulation": f"reformulation (<= {REFORMULATION_WINDOW_S:g} s)",
    "abandonment": "abandonment",
}


def render_text(report: FeedbackReport) -> str:
    """The human-readable report: the caveat, the window, then every group's metrics."""
    sel = report.selection
    lines = [
        f"Interaction feedback report: {sel.path}",
        OBSERVATIONAL,
        f"Window: since {sel.window_start.isoformat(timespec='seconds')} "
        f"(last {sel.window_days} days); {len(sel.events)} events, "
        f"{report.overall.requests} requests, {report.overall.sessions} sessions; "
        f"{sel.outside_window} older events not counted; {len(sel.problems)} unreadable lines "
        "skipped.",
        f"Slices: {report.slice_note}",
        f"Rates are count/requests; 'n<{MIN_REQUESTS}' marks too few to read much into.",
        "",
        *_group_lines("Overall", report.overall, ""),
    ]
    for name, groups in report.breakdowns.items():
        lines += ["", name.replace("_", " ").capitalize()]
        for key, metrics in groups.items():
            lines += _group_lines(key, metrics, "  ")
    lines += ["", "Definitions"]
    lines += [f"  {name}: {text}" for name, text in DEFINITIONS.items()]
    return "\n".join(lines) + "\n"


def _group_lines(title: str, m: GroupMetrics, indent: str) -> list[str]:
    few = f"  n<{MIN_REQUESTS}"
    out = [f"{indent}{title}: {m.requests} requests, {m.sessions} sessions"]
    for name, rate in m.rates.items():
        value = "-" if rate.rate is None else f"{rate.rate:.3f}"
        out.append(
            f"{indent}  {_LABELS[name]:<28}{value:>7}  {rate.count}/{rate.n}"
            f"{few if rate.too_few else ''}"
        )
    out.append(
        f"{indent}  {'mean reciprocal chosen rank':<28}{m.mean_reciprocal_rank:>7.3f}  "
        f"n={m.requests}{few if m.requests < MIN_REQUESTS else ''}"
    )
    if m.choose_n:
        out.append(
            f"{indent}  {'render to choose':<28} median {m.choose_median_ms:.0f} ms, "
            f"p90 {m.choose_p90_ms:.0f} ms  n={m.choose_n}"
            f"{few if m.choose_n < MIN_REQUESTS else ''}"
        )
    ranks = " ".join(f"{k}:{v}" for k, v in m.chosen_ranks.items() if v)
    out.append(f"{indent}  {'chosen ranks':<28}{ranks or '-'}")
    return out


def chosen_rank_png(report: FeedbackReport) -> bytes:
    """Bars: how many chosen requests picked each rank (1..10, >10), overall."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    labels = list(report.overall.chosen_ranks)
    counts = list(report.overall.chosen_ranks.values())
    figure = Figure(figsize=(6.0, 4.0))
    axes = figure.subplots()
    axes.bar(range(len(labels)), counts, color="tab:blue")
    axes.set_xticks(range(len(labels)), labels)
    axes.set_xlabel("rank of the first choose")
    axes.set_ylabel("requests")
    total = sum(counts)
    axes.set_title(f"Chosen rank ({total} of {report.overall.requests} requests; observational)")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    return buffer.getvalue()


# ----- export -------------------------------------------------------------------------------


def ensure_new(out: Path) -> None:
    """Refuse a target that exists: an export never overwrites anything."""
    if out.exists() or out.is_symlink():
        raise ExportError(f"{out}: already exists; the export never overwrites a file")


def write_export(events: Sequence[LoggedEvent], out: Path, with_queries: bool) -> int:
    """Write the events as JSON lines to a new file `out` (0600); query text only if asked.

    Only the logger's known fields are written. Returns the number of events written.
    """
    ensure_new(out)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(out, flags, 0o600)
    except FileExistsError as exc:
        raise ExportError(f"{out}: already exists; the export never overwrites a file") from exc
    except OSError as exc:
        raise ExportError(f"{out}: cannot create the export: {exc}") from exc
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        for event in events:
            record = event.to_record(with_queries)
            handle.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
    return len(events)
