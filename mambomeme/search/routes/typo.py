"""The typo route: the cue's words plus their corrections (search/typo.py), searched with OR.

A cue gets a list only when some of its content tokens have a correction. Evidence: the item
holds at least `search.min_typo_coverage` of the cue's content tokens, a token counting when the
item contains it or one of its corrections (stricter than lexical: corrections are guesses).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import ClassVar

from mambomeme.search.evidence import coverage
from mambomeme.search.results import RouteHit
from mambomeme.search.routes.base import (
    CueEvidence,
    CueHits,
    Lap,
    RouteContext,
    RouteQuery,
    Signal,
)
from mambomeme.search.typo import TypoCorrector


class TypoRoute:
    name: ClassVar[str] = "typo"
    evidence_param: ClassVar[str] = "min_typo_coverage"
    signal: ClassVar[Signal] = Signal.OTHER

    def __init__(self, context: RouteContext) -> None:
        self.index = context.lexical
        self._corrector: TypoCorrector | None = None
        self._lock = threading.Lock()

    def load(self, variant: str) -> None:
        self.corrector()

    def corrector(self) -> TypoCorrector:
        """The corrector over the index vocabulary (0.3 s to build on memes-full, so only
        systems with the typo route pay it, once per process)."""
        with self._lock:
            if self._corrector is None:
                self._corrector = TypoCorrector(self.index.vocabulary())
            return self._corrector

    def embedding_manifest(self, variant: str) -> Path | None:
        return None

    def candidates(self, query: RouteQuery, lap: Lap) -> list[CueHits]:
        found = []
        for cue in query.cues:
            corrections = self.corrector().corrections(cue.content)
            if corrections:
                fixes = [c for cs in corrections.values() for c in cs]
                self.index.note_use(fixes, query.columns)
                words = [*cue.tokens, *fixes]
                fixed = self.index.search_tokens(
                    words, False, query.columns, query.mask, query.depth
                )
                found.append(CueHits(cue.index, [(h.row, h.score) for h in fixed], corrections))
        return found

    def has_evidence(self, hit: RouteHit, cue: CueEvidence, minimum: float) -> bool:
        return coverage(cue.content, cue.corrections, cue.present()) >= minimum
