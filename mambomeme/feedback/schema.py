"""The interaction event schema shared by the TUI's event log (tui/feedback.py, which writes
it) and the feedback analytics (this package, which reads it)."""

from __future__ import annotations

from dataclasses import dataclass

from mambomeme.errors import MamboMemeError

EVENT_SCHEMA_VERSION = "interaction-v1"
ACTIONS = ("preview", "open", "copy", "choose", "reformulate", "abandon")
ITEM_ACTIONS = frozenset({"preview", "open", "copy", "choose"})
RETENTION_DAYS = 30


class FeedbackError(MamboMemeError):
    """The events file could not be written or read safely."""


@dataclass(frozen=True)
class Shown:
    id: str
    rank: int
