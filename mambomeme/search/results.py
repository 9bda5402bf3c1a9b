"""Typed records a search returns: what the CLI, the TUI, runs and tests read."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Filters:
    """Request filters; None means 'any'. Values are bounded in search/bounds.py."""

    kind: str | None = None
    language: str | None = None
    template: str | None = None


@dataclass(frozen=True)
class RouteHit:
    """One route's view of an item for one cue: 1-based rank among eligible items and raw score."""

    cue: int
    route: str
    rank: int
    score: float


@dataclass(frozen=True)
class MatchedField:
    """A field that matched lexically, with a short snippet around the match."""

    field: str
    snippet: str


@dataclass(frozen=True)
class Result:
    rank: int
    item_id: str
    title: str
    template: str
    kind: str
    preview: str
    attribution: str
    license: str
    fused_score: float
    hits: tuple[RouteHit, ...]
    matched_fields: tuple[MatchedField, ...]

    @property
    def routes(self) -> tuple[str, ...]:
        return tuple(sorted({h.route for h in self.hits}))


@dataclass(frozen=True)
class SearchResponse:
    """An ordered result list; empty with `empty_reason` set when nothing had enough evidence."""

    request_id: str
    system: str
    cues: tuple[str, ...]
    results: tuple[Result, ...]
    timings_ms: dict[str, float] = field(default_factory=dict)
    empty_reason: str = ""
    added_cues: tuple[str, ...] = ()  # cues the engine added (a chat-spelling rewrite)
