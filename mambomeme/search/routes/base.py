"""What a route is: one way of finding candidates for a cue, fused with the others by the engine.

A route module defines one class that satisfies `Route` and is entered in the registry
(routes/__init__.py: `ROUTES`); systems (search/systems.py) name the routes they search. The
engine gives every route of a system the same `RouteQuery` (the normalised cues, the searchable
fields, the eligibility mask, the depth) and fuses what they return; it asks a route's
`has_evidence` whether one of its hits is good enough to show, with the route's own minimum
(params `search.<evidence_param>`), and its weight is params `search.route_weights.<name>`.

A route is built once per engine from the `RouteContext` and loads what it needs (a model, an
index) on its first search or on `load`, once per process and thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import ClassVar, Protocol

import numpy as np

from mambomeme.index.dense_quantised import EXACT, ScanConfig
from mambomeme.index.lexical import LexicalIndex
from mambomeme.search.items import ItemTable
from mambomeme.search.results import RouteHit

Lap = Callable[[str], None]  # records the time since the last lap under a name (timings_ms)


class Signal(Enum):
    """What a route's raw scores mean to the rest of search."""

    WORDS = "words"  # BM25 of the cue's own words: exact-first and abstention read its lists
    MEANING = "meaning"  # cosine similarity: abstention reads it, diagnostics count it semantic
    OTHER = "other"  # read only through fusion and the route's own evidence rule


@dataclass(frozen=True)
class RouteContext:
    """What routes are built from: the served folder and the engine's shared tables."""

    build_dir: Path
    items: ItemTable
    lexical: LexicalIndex
    device: str  # params dense.device: where query models run
    query_threads: int  # params dense.query_threads
    query_encoder: str  # params dense.query_encoder: onnx or torch
    dense_scan: ScanConfig = EXACT  # params dense.scan: exact, or sq8 + exact rescoring


@dataclass(frozen=True)
class Cue:
    """One cue of a request that has at least one token."""

    index: int  # position among the request's cues (0 = the main cue)
    text: str  # normalised
    tokens: list[str]  # FTS5 tokens
    content: list[str]  # the tokens that are not stop words


@dataclass(frozen=True)
class RouteQuery:
    cues: tuple[Cue, ...]
    fields: tuple[str, ...]  # searchable fields (an ablation leaves some out)
    columns: list[str] | None  # the same as lexical columns; None = all of them
    variant: str  # "" = the full indexes, else the ablation's name (its own matrices)
    mask: np.ndarray  # eligible rows
    depth: int  # candidates per cue


@dataclass(frozen=True)
class CueHits:
    """A route's candidates for one cue: (row, raw score), best first, all eligible."""

    cue: int
    hits: list[tuple[int, float]]
    corrections: Mapping[str, list[str]] = field(default_factory=dict)  # token -> spellings


@dataclass(frozen=True)
class CueEvidence:
    """What an evidence rule may read about one cue and one candidate."""

    content: Sequence[str]  # the cue's content tokens
    corrections: Mapping[str, Sequence[str]]  # its corrected spellings, if a route made some
    present: Callable[[], set[str]]  # the candidate's folded tokens (computed on first call)


class Route(Protocol):
    name: ClassVar[str]  # = its registry key, its RouteHit.route and its route_weights key
    evidence_param: ClassVar[str]  # the `search` param holding its minimum evidence
    signal: ClassVar[Signal]

    def __init__(self, context: RouteContext) -> None: ...

    def load(self, variant: str) -> None:
        """Load what a search of `variant` needs (nothing to do when it is loaded)."""

    def embedding_manifest(self, variant: str) -> Path | None:
        """The embedding manifest a search of `variant` reads, if the route reads one."""

    def candidates(self, query: RouteQuery, lap: Lap) -> list[CueHits]:
        """Up to `query.depth` eligible candidates per cue (a cue may get no list)."""

    def has_evidence(self, hit: RouteHit, cue: CueEvidence, minimum: float) -> bool:
        """Whether this hit alone is enough evidence to show its item."""
