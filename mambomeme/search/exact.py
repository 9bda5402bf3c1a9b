"""Exact identity matches: a cue that names an item (its title, an alias, a person, its
template or a template alias, word for word) or quotes its caption in full.

Fusion must not push such an item below semantic neighbours (the ranking issue: hybrid's
ExactMRR fell from 0.88 to 0.74 when the dense route outvoted title matches), so the engine
ranks exact matches first, in fused order among themselves (`search.exact_first`). Only items a
lexical route found are checked (an exact match always contains the cue's words).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mambomeme.corpus.normalise import normalise
from mambomeme.corpus.schema import Item
from mambomeme.index.fts_query import STOPWORDS

_TOKEN = re.compile(r"[^\W_]+(?:[\u0300-\u036f]+[^\W_]*)*")
GENERIC = frozenset({"template", "templates", "gif", "pic", "picture", "image", "format"})
IDENTITY = ("title", "aliases", "people", "template", "template_aliases")
MIN_QUOTE_WORDS = 3
CHECKED_PER_LIST = 30  # top lexical candidates per cue checked for an exact match


def words(text: str) -> list[str]:
    return [m.group(0) for m in _TOKEN.finditer(normalise(text).casefold())]


def _content(tokens: Sequence[str]) -> frozenset[str]:
    return frozenset(t for t in tokens if t not in STOPWORDS and t not in GENERIC)


def is_exact(cue_words: Sequence[str], item: Item) -> bool:
    """The cue names the item (same content words as one identity field) or quotes its
    caption or title in full (at least MIN_QUOTE_WORDS words, in order)."""
    cue = _content(cue_words)
    if cue:
        for name in IDENTITY:
            value = getattr(item, name)
            for text in value if isinstance(value, tuple) else (value,):
                if text and _content(words(text)) == cue:
                    return True
    if len(cue_words) >= MIN_QUOTE_WORDS:
        n = len(cue_words)
        for text in (item.ocr_text, item.title):
            found = words(text)
            if any(found[i : i + n] == list(cue_words) for i in range(len(found) - n + 1)):
                return True
    return False
