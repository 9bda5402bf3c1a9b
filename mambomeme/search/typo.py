"""Typo tolerance: correct query tokens against the corpus vocabulary.

For every content token of three or more letters we look for vocabulary tokens within a small
Levenshtein distance (1 edit up to 4 letters, 2 edits from 5) that are at least ten times as
frequent in the corpus as the token itself (absent tokens have frequency 0), so a rare spelling
is corrected while an ordinary word is left alone. Candidates that sound the
same (equal `phonetic_key`) come first, then fewer edits, then higher frequency; stop words and
tokens under three letters are never offered as corrections. "jon sena" -> john, cena;
"grumpy catt" -> cat, "disater girl" -> disaster. The corrected tokens feed a separate lexical
"typo" route that is fused like any other route, so a correction can add candidates but never
removes what the exact words found. rapidfuzz does the distance search in C++.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from mambomeme.index.fts_query import STOPWORDS

TYPO_VERSION = "levenshtein-phonetic-2"
RATIO = 10  # a correction must be this many times more frequent than the typed token


def max_edits(token: str) -> int:
    return 1 if len(token) <= 4 else 2


_SOUNDS = (
    (r"ph", "f"),
    (r"ck", "k"),
    (r"c(?=[eiy])", "s"),
    (r"c", "k"),
    (r"q", "k"),
    (r"z", "s"),
    (r"x", "ks"),
    (r"(?<=.)h", ""),
    (r"w(?=[^aeiou]|$)", ""),
)


def phonetic_key(token: str) -> str:
    """A rough English sound-alike key: 'cena' and 'sena' -> 'sn', 'john' and 'jon' -> 'jn'."""
    key = token.casefold()
    for pattern, sound in _SOUNDS:
        key = re.sub(pattern, sound, key)
    key = re.sub(r"(.)\1+", r"\1", key)
    return key[:1] + re.sub(r"[aeiouy]", "", key[1:])


class TypoCorrector:
    def __init__(self, vocabulary: Mapping[str, int], max_candidates: int = 3) -> None:
        self._df = {
            t: df
            for t, df in vocabulary.items()
            if len(t) >= 3 and t.isalpha() and t not in STOPWORDS
        }
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
            sound = phonetic_key(token)
            floor = max(1, RATIO * own)
            better = [
                (phonetic_key(cand) != sound, dist, -self._df[cand], cand)
                for cand, dist, _ in matches
                if cand != token and self._df[cand] >= floor
            ]
            if better:
                found[token] = [cand for *_, cand in sorted(better)[: self._max_candidates]]
        return found
