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

Cost: a token is compared only with vocabulary tokens that could qualify. Levenshtein distance
<= d needs a length difference <= d, and a correction needs df >= max(1, RATIO * own df), so
the vocabulary is kept in one bucket per length, each sorted by df (highest first): a token
reads the df-eligible prefix of 2d + 1 buckets, not the whole vocabulary. Phonetic keys are
memoised. The output is the same as a scan of the whole vocabulary (tests/test_typo.py checks
this against that scan).
"""

from __future__ import annotations

import re
from bisect import bisect_right
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
        self._max_candidates = max_candidates
        # length -> tokens of that length by df descending, and their negated dfs (ascending,
        # for bisect): the df-eligible candidates of a length are a prefix
        by_length: dict[int, list[str]] = {}
        for token in self._df:
            by_length.setdefault(len(token), []).append(token)
        self._by_length = {
            n: sorted(tokens, key=self._df.__getitem__, reverse=True)
            for n, tokens in by_length.items()
        }
        self._neg_df = {n: [-self._df[t] for t in tokens] for n, tokens in self._by_length.items()}
        self._sound: dict[str, str] = {}

    def _phonetic(self, token: str) -> str:
        """phonetic_key of a vocabulary token, memoised (bounded by the vocabulary)."""
        key = self._sound.get(token)
        if key is None:
            key = self._sound[token] = phonetic_key(token)
        return key

    def _candidates(self, token: str, edits: int, floor: int) -> list[tuple[str, int]]:
        """(vocabulary token, distance) within `edits` of `token` with df >= floor."""
        found: list[tuple[str, int]] = []
        for length in range(len(token) - edits, len(token) + edits + 1):
            tokens = self._by_length.get(length)
            if not tokens:
                continue
            end = bisect_right(self._neg_df[length], -floor)
            if end == 0:
                continue
            matches = process.extract(
                token,
                tokens[:end],
                scorer=Levenshtein.distance,
                score_cutoff=edits,
                limit=None,
            )
            found.extend((cand, int(dist)) for cand, dist, _ in matches)
        return found

    def corrections(self, tokens: Sequence[str]) -> dict[str, list[str]]:
        """token -> more frequent near spellings, for tokens that have any."""
        found: dict[str, list[str]] = {}
        for token in tokens:
            if len(token) < 3 or token in STOPWORDS or not token.isalpha():
                continue
            own = self._df.get(token, 0)
            floor = max(1, RATIO * own)
            matches = self._candidates(token, max_edits(token), floor)
            if not matches:
                continue
            sound = phonetic_key(token)
            better = [
                (self._phonetic(cand) != sound, dist, -self._df[cand], cand)
                for cand, dist in matches
                if cand != token
            ]
            if better:
                found[token] = [cand for *_, cand in sorted(better)[: self._max_candidates]]
        return found
