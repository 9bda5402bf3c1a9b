"""Minimum evidence: which candidates are good enough to show at all.

A candidate has evidence when, for some cue, some route that found it says its hit is enough
by that route's own rule (`Route.has_evidence`, with the route's minimum from params):
  - lexical (routes/lexical.py): the item's searchable fields hold at least
    `min_lexical_coverage` of the cue's content tokens;
  - typo (routes/typo.py): at least `min_typo_coverage` of them, a token counting as matched
    when the item contains it or one of its corrections (stricter: corrections are guesses);
  - dense (routes/dense.py): cosine >= `min_cosine`.
Candidates without evidence are dropped; when none has any, the list is honestly empty.
Raw BM25 and cosine values are evidence, not probabilities: the thresholds are tuned on dev.
This module holds what the rules share: folded item tokens and token coverage.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping, Sequence

from mambomeme.corpus.schema import Item
from mambomeme.index.fts_query import tokenize_all


def fold(token: str) -> str:
    """Casefolded token without diacritics (as FTS5's remove_diacritics does)."""
    if token.isascii():  # the common case: NFD leaves ASCII alone and casefold is lower
        return token.lower()
    decomposed = unicodedata.normalize("NFD", token.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def item_tokens(item: Item, fields: Iterable[str]) -> set[str]:
    raw = {t for name in fields for t in tokenize_all(item.field_text(name))}
    return {fold(t) for t in raw}


def coverage(
    tokens: Sequence[str], corrections: Mapping[str, Sequence[str]], present: set[str]
) -> float:
    """Fraction of `tokens` the item contains, directly or through a correction."""
    if not tokens:
        return 0.0
    hit = 0
    for token in tokens:
        spellings = [token, *corrections.get(token, ())]
        if any(fold(s) in present for s in spellings):
            hit += 1
    return hit / len(tokens)


def spellings(
    tokens: Sequence[str], corrections: Mapping[str, Sequence[str]]
) -> list[frozenset[str]]:
    """Per token, its folded spellings (itself and its corrections): what `coverage` looks for,
    folded once per request instead of once per candidate."""
    return [frozenset(fold(s) for s in (t, *corrections.get(t, ()))) for t in tokens]


def covered(token_spellings: Sequence[frozenset[str]], present: set[str]) -> list[bool]:
    """Per token, whether the item contains one of its spellings:
    coverage(tokens, corrections, present) == sum(covered(...)) / len(tokens)."""
    return [not spelled.isdisjoint(present) for spelled in token_spellings]
