"""The local events file as the report reads it: events inside the window, corrupt lines named
by number and skipped (metrics.py defines what is counted)."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from mambomeme.feedback.schema import (
    ACTIONS,
    EVENT_SCHEMA_VERSION,
    ITEM_ACTIONS,
    RETENTION_DAYS,
    FeedbackError,
    Shown,
)

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
