"""Exact identity matches: a cue that names an item (its title, an alias, a person, its
template or a template alias, word for word) or quotes its caption in full.

Fusion must not push such an item below semantic neighbours (the ranking issue: hybrid's
ExactMRR fell from 0.88 to 0.74 when the dense route outvoted title matches), so the engine
ranks exact matches first (`search.exact_first`), by `exact_tier` and in fused order within a
tier: a template the cue names, then captions the cue quotes, then other exact matches (every
meme of a template carries its name as title; on memes-10k dev-v2 the tiers raised ExactMRR
from 0.886 to 0.907, and on dev-v1 from 0.925 to 0.967). Only items a
lexical route found are checked (an exact match always contains the cue's words).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from mambomeme.corpus.normalise import normalise
from mambomeme.corpus.schema import Item
from mambomeme.index.fts_query import STOPWORDS

_TOKEN = re.compile(r"[^\W_]+(?:[\u0300-\u036f]+[^\W_]*)*")
GENERIC = frozenset({"template", "templates", "gif", "pic", "picture", "image", "format"})
IDENTITY = ("title", "aliases", "people", "template", "template_aliases")
MIN_QUOTE_WORDS = 3
CHECKED_PER_LIST = 30  # top lexical candidates per cue checked for an exact match
WORDS_CACHED = 65536  # texts whose words are kept


def words(text: str) -> list[str]:
    return list(_words(text))


@lru_cache(maxsize=WORDS_CACHED)
def _words(text: str) -> tuple[str, ...]:
    """The folded words of a text (item texts repeat across requests: cached)."""
    return tuple(m.group(0) for m in _TOKEN.finditer(normalise(text).casefold()))


def _content(tokens: Sequence[str]) -> frozenset[str]:
    return frozenset(t for t in tokens if t not in STOPWORDS and t not in GENERIC)


def names_template(cue_words: Sequence[str], item: Item) -> bool:
    """The item is a template and the cue is its name or one of its aliases, word for word."""
    cue = _content(cue_words)
    if not cue or item.kind != "template":
        return False
    return any(_content(words(text)) == cue for text in (item.title, *item.aliases) if text)


def _quotes(cue_words: Sequence[str], text: str) -> bool:
    """`text` holds the cue's words in order, the cue being at least MIN_QUOTE_WORDS long."""
    n = len(cue_words)
    if n < MIN_QUOTE_WORDS:
        return False
    found = words(text)
    return any(found[i : i + n] == list(cue_words) for i in range(len(found) - n + 1))


def quotes_caption(cue_words: Sequence[str], item: Item) -> bool:
    """The cue quotes the item's caption in full: at least MIN_QUOTE_WORDS words, in order."""
    return _quotes(cue_words, item.ocr_text)


def exact_tier(cues: Sequence[Sequence[str]], item: Item) -> int:
    """Where an exact match ranks among exact matches (lower first): 0 a template a cue names
    (the canonical answer to a name), 1 an item whose caption a cue quotes in full (the answer
    to a quote), 2 any other exact match (e.g. a meme titled with its template's name)."""
    if any(names_template(cue, item) for cue in cues):
        return 0
    if any(quotes_caption(cue, item) for cue in cues):
        return 1
    return 2


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
    return _quotes(cue_words, item.ocr_text) or _quotes(cue_words, item.title)
