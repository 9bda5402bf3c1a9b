"""Result presentation helpers: which fields matched, with a short snippet around the match."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache

from mambomeme.corpus.normalise import normalise
from mambomeme.corpus.schema import Item
from mambomeme.index.fts_query import tokenize_all
from mambomeme.search.evidence import fold
from mambomeme.search.results import MatchedField

SNIPPET_CHARS = 80
ANALYSED_FIELDS_CACHED = 16384  # field texts whose analysis is kept (template texts repeat)


def matched_fields(
    item: Item, fields: Sequence[str], tokens: Iterable[str]
) -> tuple[MatchedField, ...]:
    wanted = {fold(t) for t in tokens}
    if not wanted:
        return ()
    found = []
    for name in fields:
        text, first = _analysed(item.field_text(name))
        hits = [(first[w], w) for w in wanted if w in first]
        if hits:
            found.append(MatchedField(name, snippet(text, min(hits)[1])))
    return tuple(found)


def matched_field_names(item: Item, fields: Sequence[str], tokens: Iterable[str]) -> frozenset[str]:
    """The names of the fields `matched_fields` would list, without their snippets (what the
    usefulness model reads for every pooled candidate; snippets are made for shown ones only)."""
    wanted = {fold(t) for t in tokens}
    return frozenset(
        name for name in fields if not wanted.isdisjoint(_analysed(item.field_text(name))[1])
    )


@lru_cache(maxsize=ANALYSED_FIELDS_CACHED)
def _analysed(raw: str) -> tuple[str, dict[str, int]]:
    """A field's normalised text and, per folded word, the position of its first occurrence."""
    text = normalise(raw)
    first: dict[str, int] = {}
    for position, word in enumerate(tokenize_all(text)):
        first.setdefault(fold(word), position)
    return text, first


def snippet(text: str, word: str) -> str:
    """A window of about SNIPPET_CHARS characters of `text` around the first `word`."""
    if len(text) <= SNIPPET_CHARS:
        return text
    folded = fold(text)
    at = folded.find(word) if len(folded) == len(text) else text.casefold().find(word)
    at = max(at, 0)
    start = max(0, at - SNIPPET_CHARS // 3)
    end = min(len(text), start + SNIPPET_CHARS)
    return ("…" if start else "") + text[start:end].strip() + ("…" if end < len(text) else "")
