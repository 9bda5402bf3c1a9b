"""The lexical route against hostile input: user text is never FTS grammar."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mambomeme.errors import BoundError
from mambomeme.index import fts_query

HOSTILE = [
    "",
    " ",
    "\t\n",
    '"',
    '""',
    '"john cena',
    'john" cena',
    "(",
    ")",
    "(john",
    "john)",
    "((cena))",
    "x-ray",
    "well-known-meme",
    "-cena",
    "AND",
    "OR",
    "NOT",
    "NEAR",
    "and or not near",
    "john AND",
    "OR cena",
    "NOT john",
    "NEAR(john cena)",
    "near/3",
    "john NEAR cena",
    "*",
    "cen*",
    "^john",
    "+john",
    "john +cena",
    "title:x",
    "title:john",
    "{title}: john",
    "ocr_text : cena",
    "\x00",
    "john\x00cena",
    "😀",
    "john 😀 cena",
    "e\u0301cole",
    "\u0301\u0302",
    "مرحبا بالعالم",
    "שלום",
    "\u202ejohn\u202c",
    "a\ud800b",
    "\udfff",
    "'",
    "can't",
    "''",
    "\\",
    "%",
    "_",
    ";",
    "'; DROP TABLE items_fts; --",
    "john'--",
    "x" * 5000,
    "john " * 900,
]


def test_hostile_set_lexical(lexical_engine: Any) -> None:
    tried = errors = refused = refused_text = 0
    for text in HOSTILE:
        tried += 1
        try:
            response = lexical_engine.search([text], limit=10, system="bm25")
            assert len(response.results) <= 10
        except BoundError as exc:
            if exc.bound == "cues":  # a lone surrogate is not UTF-8 text: refused, named
                assert any(0xD800 <= ord(ch) <= 0xDFFF for ch in text), text
                refused_text += 1
                continue
            assert exc.bound == "max_cue_bytes"
            assert len(text.encode("utf-8", "surrogatepass")) > 1000
            refused += 1
        except Exception:  # noqa: BLE001 - counting is the point of this test
            errors += 1
    print(f"{tried} tried, {errors} errors ({refused} refused by a named bound)")
    assert errors == 0
    assert refused == 2


def test_operators_are_searched_as_words(lexical_engine: Any) -> None:
    assert fts_query.all_of(["and", "near"]) == '"and" AND "near"'
    for word in ("AND", "or", "NOT", "near"):
        lexical_engine.search([f"john {word} cena"], system="bm25")
    # "cena AND" as plain words still finds John Cena (the operator word is just another token)
    top = lexical_engine.search(["john cena and"], system="bm25").results
    assert top and "cena" in top[0].title.casefold() + " ".join(top[0].template.casefold().split())


def test_quote_escaping_doubles_quotes() -> None:
    assert fts_query.quote('a"b') == '"a""b"'
    assert fts_query.any_of(["x"], ["title", "tags"]) == '{title tags} : ("x")'
    with pytest.raises(ValueError):
        fts_query.any_of(["x"], ["title) OR (x"])
    with pytest.raises(ValueError):
        fts_query.all_of([])


def test_tokens_are_bounded() -> None:
    assert len(fts_query.tokenize(" ".join(f"w{i}" for i in range(500)))) == fts_query.MAX_TOKENS


def test_john_cena_first_and_quote_found(lexical_engine: Any) -> None:
    first = lexical_engine.search(["john cena"], system="bm25").results[0]
    assert "John Cena" in (first.template, first.title)
    quote = lexical_engine.search(["you can't see me"], system="bm25").results
    assert any(r.template == "John Cena" for r in quote[:3])


def test_over_long_cue_is_refused_with_the_bound_named(lexical_engine: Any) -> None:
    with pytest.raises(BoundError) as info:
        lexical_engine.search(["x" * 5000], system="bm25")
    assert info.value.bound == "max_cue_bytes"
    with pytest.raises(BoundError) as info:
        lexical_engine.search(["a"] * 50, system="bm25")
    assert info.value.bound == "max_cues"
    with pytest.raises(BoundError) as info:
        lexical_engine.search(["a"], limit=10_000, system="bm25")
    assert info.value.bound == "max_limit"


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=st.text(max_size=200), limit=st.integers(1, 100))
def test_search_never_raises_and_respects_limit(lexical_engine: Any, text: str, limit: int) -> None:
    response = lexical_engine.search([text], limit=limit, system="bm25+typo")
    assert len(response.results) <= limit
