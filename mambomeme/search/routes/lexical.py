"""The lexical route: SQLite FTS5 BM25 over the searchable fields, one column per field.

For one cue every token (AND) first; if that finds fewer than `depth`, any content word (OR)
refills below them (stop words alone would match nearly every item). Evidence: the item's
searchable fields hold at least `search.min_lexical_coverage` of the cue's content tokens.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import numpy as np

from mambomeme.index.lexical import LexicalIndex
from mambomeme.search.evidence import coverage
from mambomeme.search.results import RouteHit
from mambomeme.search.routes.base import (
    Cue,
    CueEvidence,
    CueHits,
    Lap,
    RouteContext,
    RouteQuery,
    Signal,
)


def lexical_candidates(
    index: LexicalIndex,
    tokens: list[str],
    content: list[str],
    cols: list[str] | None,
    mask: np.ndarray,
    depth: int,
) -> list[tuple[int, float]]:
    """The lexical route for one cue (the module docstring)."""
    index.note_use(tokens, cols)
    hits = index.search_tokens(tokens, True, cols, mask, depth)
    if len(hits) < depth and len(tokens) > 1:
        seen = {h.row for h in hits}
        extra = index.search_tokens(content, False, cols, mask, depth)
        hits += [h for h in extra if h.row not in seen][: depth - len(hits)]
    return [(h.row, h.score) for h in hits]


class LexicalRoute:
    name: ClassVar[str] = "lexical"
    evidence_param: ClassVar[str] = "min_lexical_coverage"
    signal: ClassVar[Signal] = Signal.WORDS

    def __init__(self, context: RouteContext) -> None:
        self.index = context.lexical

    def load(self, variant: str) -> None:
        """Nothing to load: the engine opens the lexical index."""

    def embedding_manifest(self, variant: str) -> Path | None:
        return None

    def candidates(self, query: RouteQuery, lap: Lap) -> list[CueHits]:
        return [self._cue(cue, query) for cue in query.cues]

    def _cue(self, cue: Cue, query: RouteQuery) -> CueHits:
        hits = lexical_candidates(
            self.index, cue.tokens, cue.content, query.columns, query.mask, query.depth
        )
        return CueHits(cue.index, hits)

    def has_evidence(self, hit: RouteHit, cue: CueEvidence, minimum: float) -> bool:
        return coverage(cue.content, {}, cue.present()) >= minimum
