"""The only way user text reaches FTS5: bounded normalised text -> quoted tokens -> expression.

User text is never FTS grammar. We tokenise the normalised text into word tokens (Unicode
letters, digits, marks), quote every token (doubling any quote, as sqlite-utils' quote_fts
does), and build only the two expressions we support:

    all_of(tokens)  ->  "tok1" AND "tok2" ...   (every token must match, any column)
    any_of(tokens)  ->  "tok1" OR "tok2" ...    (at least one token)

optionally restricted to a set of columns with FTS5's column filter `{c1 c2} : (...)`, whose
column names come from our own schema, never from the user. The expression is bound as a SQL
parameter. Operators typed by the user (AND, OR, NOT, NEAR, *, ^, +, col:) are ordinary words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mambomeme.corpus.normalise import normalise

QUERY_BUILDER_VERSION = "fts-quoted-and-or-1"
MAX_TOKENS = 32

# \w in Python matches Unicode letters and digits; combining marks are kept with their base.
_TOKEN = re.compile(r"[^\W_]+(?:[\u0300-\u036f]+[^\W_]*)*")

STOPWORDS = frozenset(
    "a an and are as at be but by for from has have he her his i in is it its me meme memes "
    "my of on or our she so that the their them they this to us was we were what when where "
    "which who will with you your t s".split()
)


def tokenize(text: str) -> list[str]:
    """Casefolded word tokens of normalised text, at most MAX_TOKENS, duplicates removed."""
    seen: dict[str, None] = {}
    for match in _TOKEN.finditer(normalise(text).casefold()):
        seen.setdefault(match.group(0), None)
        if len(seen) >= MAX_TOKENS:
            break
    return list(seen)


def content_tokens(tokens: Sequence[str]) -> list[str]:
    """Tokens that carry meaning; all tokens when every one is a stop word ("you can't see me")."""
    kept = [t for t in tokens if t not in STOPWORDS]
    return kept or list(tokens)


def quote(token: str) -> str:
    return '"' + token.replace('"', '""') + '"'


def all_of(tokens: Sequence[str], columns: Sequence[str] | None = None) -> str:
    return _wrap(" AND ".join(quote(t) for t in tokens), columns)


def any_of(tokens: Sequence[str], columns: Sequence[str] | None = None) -> str:
    return _wrap(" OR ".join(quote(t) for t in tokens), columns)


def _wrap(expression: str, columns: Sequence[str] | None) -> str:
    if not expression:
        raise ValueError("no tokens to match")
    if columns is None:
        return expression
    for column in columns:
        if not column.isidentifier():
            raise ValueError(f"bad column name {column!r}")
    return "{" + " ".join(columns) + "} : (" + expression + ")"


def tokenize_all(text: str) -> list[str]:
    """Every token of a (corpus) text, unbounded, for vocabulary building."""
    return [m.group(0) for m in _TOKEN.finditer(normalise(text).casefold())]
