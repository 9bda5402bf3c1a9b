"""Result presentation helpers: which fields matched, with a short snippet around the match."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from mambomeme.corpus.normalise import normalise
from mambomeme.corpus.schema import Item
from mambomeme.index.fts_query import tokenize_all
from mambomeme.search.evidence import fold
from mambomeme.search.results import MatchedField

SNIPPET_CHARS = 80


def matched_fields(
    item: Item, fields: Sequence[str], tokens: Iterable[str]
) -> tuple[MatchedField, ...]:
    wanted = {fold(t) for t in tokens}
    if not wanted:
        return ()
    found = []
    for name in fields:
        text = normalise(item.field_text(name))
        words = [fold(w) for w in tokenize_all(text)]
        hits = [w for w in words if w in wanted]
        if hits:
            found.append(MatchedField(name, snippet(text, hits[0])))
    return tuple(found)


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
