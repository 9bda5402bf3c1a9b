"""Feedback analytics: interaction metrics over the local events file and its export
(`mambomeme feedback report|export`). Observational numbers, never benchmark truth."""

from __future__ import annotations

from mambomeme.feedback.events import (
    ExportError,
    LineProblem,
    LoggedEvent,
    NoEventsError,
    Selection,
    select_events,
)
from mambomeme.feedback.export import ensure_new, write_export
from mambomeme.feedback.metrics import (
    FeedbackReport,
    GroupMetrics,
    SliceIndex,
    build_report,
    group_metrics,
    load_slices,
    requests_of,
)
from mambomeme.feedback.report import chosen_rank_png, render_text

__all__ = [
    "ExportError",
    "FeedbackReport",
    "GroupMetrics",
    "LineProblem",
    "LoggedEvent",
    "NoEventsError",
    "Selection",
    "SliceIndex",
    "build_report",
    "chosen_rank_png",
    "ensure_new",
    "group_metrics",
    "load_slices",
    "render_text",
    "requests_of",
    "select_events",
    "write_export",
]
