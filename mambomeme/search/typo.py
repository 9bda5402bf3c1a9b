"""Typo tolerance: correct query tokens against the corpus vocabulary.

For every content token of three or more letters we look for vocabulary tokens within a small
Levenshtein distance (1 edit up to 4 letters, 2 edits from 5) that are strictly more frequent in
the corpus than the token itself (absent tokens have frequency 0). "jon sena" -> john, cena;
"grumpy catt" -> cat, "disater girl" -> disaster. The corrected tokens feed a separate lexical
"typo" route that is fused like any other route, so a correction can add candidates but never
removes what the exact words found. rapidfuzz does the distance search in C++.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from mambomeme.index.fts_query import STOPWORDS

TYPO_VERSION = "levenshtein-more-frequent-1"


def max_edits(token: str) -> int:
    return 1 if len(token) <= 4 else 2


class TypoCorrector:
    def __init__(self, vocabulary: Mapping[str, int], max_candidates: int = 3) -> None:
        self._df = {t: df for t, df in vocabulary.items() if len(t) >= 2 and t.isalpha()}
        self._choices = sorted(self._df)
        self._max_candidates = max_candidates

    def corrections(self, tokens: Sequence[str]) -> dict[str, list[str]]:
        """token -> more frequent near spellings, for tokens that have any."""
        found: dict[str, list[str]] = {}
        for token in tokens:
            if len(token) < 3 or token in STOPWORDS or not token.isalpha():
                continue
            own = self._df.get(token, 0)
            matches = process.extract(
                token,
                self._choices,
                scorer=Levenshtein.distance,
                score_cutoff=max_edits(token),
                limit=None,
            )
            better = [(dist, -self._df[cand], cand) for cand, dist, _ in matches
                      if cand != token and self._df[cand] > own]
            if better:
                found[token] = [cand for _, _, cand in sorted(better)[: self._max_candidates]]
        return found
