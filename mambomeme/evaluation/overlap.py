"""How much of a query's wording the system's own text already holds (issue 31).

A query written while reading our knowledge base tends to reuse its words, so lexical search
looks better on it than on what users type. Two shares per query, both over the query's
*content words* (casefolded alphanumeric tokens of 3+ letters that are not stop words, with a
light plural fold so "cats" meets "cat"):

- knowledge share: the share of content words found in the target template's knowledge entry
  (name, aliases, tags, people, visual_description, meaning, typical_use, origin);
- caption share: the share found in the target items' own public text (title, template name,
  caption/OCR text).

The seed's concept slice asks for a paraphrase *without* lexical overlap; QUERY-WRITING.md's
concept rule (no content word shared with title, template name or caption) is `shared_words`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# A short English stop list (function words, auxiliaries, pronouns, quantifiers): words that
# carry no topic, so sharing them is not overlap. Chat fillers are kept as content on purpose.
STOP_WORDS = frozenset(
    """
    a about above after again against all also am an and any are aren as at be because been
    before being below between both but by can cannot could couldn did didn do does doesn doing
    don down during each else even ever every few for from further get gets getting got had hadn
    has hasn have haven having he her here hers herself him himself his how i if in into is isn
    it its itself just let like made make makes many may me might more most much must my myself
    no nor not now of off on once one only or other ought our ours ourselves out over own same
    shall she should shouldn so some such than that the their theirs them themselves then there
    these they this those through thing things to too under until up upon us very was wasn we
    were weren what when where which while who whom whose why will with won would wouldn yet you
    your yours yourself yourselves meme memes
    """.split()
)
_TOKEN = re.compile(r"[^\W_]+")


def fold(word: str) -> str:
    """A light plural/possessive fold: "cats" -> "cat", "boss's" -> "boss" (not a stemmer)."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def content_words(text: str) -> frozenset[str]:
    """Casefolded tokens of 3+ characters, stop words removed, plural-folded."""
    words = _TOKEN.findall(text.replace("'", "").replace("\u2019", "").casefold())
    return frozenset(fold(w) for w in words if len(w) >= 3 and w not in STOP_WORDS)


def shared_words(query_texts: Iterable[str], target_texts: Iterable[str]) -> frozenset[str]:
    """Content words of the query (text and cues) that also occur in the target texts."""
    query: set[str] = set()
    for text in query_texts:
        query |= content_words(text)
    target: set[str] = set()
    for text in target_texts:
        target |= content_words(text)
    return frozenset(query & target)


def share(query_texts: Iterable[str], target_texts: Iterable[str]) -> float | None:
    """|shared content words| / |query content words|; None for a query with no content word."""
    texts = list(query_texts)
    query: set[str] = set()
    for text in texts:
        query |= content_words(text)
    if not query:
        return None
    return len(shared_words(texts, target_texts)) / len(query)
