"""Fuzz `Engine.search`: arbitrary cues, limits, filters and systems, lone surrogates included,
end in a response or a typed error (a MamboMemeError subclass), never anything else."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from mambomeme.errors import MamboMemeError
from mambomeme.search.results import Filters, SearchResponse

# every code point, surrogates (what invalid bytes in argv become) and NUL included
ANY_CHAR = st.characters(codec=None, exclude_categories=())
WORDS = st.sampled_from(["john", "cena", "cat", "the", "grumpy", "AND", "NOT", '"', "*", "^", ":"])
PLAIN = st.one_of(
    st.lists(WORDS, min_size=1, max_size=6).map(" ".join),
    st.text(st.characters(exclude_categories=("Cs", "Cc")), max_size=30),
)
HOSTILE_TEXT = st.one_of(
    st.text(ANY_CHAR, max_size=40),
    st.builds(lambda n, c: c * n, st.integers(0, 1200), st.sampled_from(["a", "\u00e9", "\ud83d"])),
    st.sampled_from(["", " ", "\x00", "\ud800", "caf\udce9", "[" * 1000]),
)
TEXT = st.one_of(PLAIN, HOSTILE_TEXT)
VALUE = st.one_of(
    st.none(),
    st.sampled_from(["meme", "template", "en", "EN", "en-GB", "Grumpy Cat", "xx"]),
    PLAIN,
)
GOOD = {
    "cues": st.lists(PLAIN, min_size=1, max_size=3),
    "limit": st.integers(1, 30),
    "filters": st.one_of(st.none(), st.builds(Filters, kind=VALUE, language=VALUE, template=VALUE)),
    "system": st.sampled_from(["bm25", "bm25+typo", "hybrid", "dense", "hybrid-no-ocr_text"]),
}
HOSTILE = {
    "cues": st.one_of(
        st.lists(TEXT, min_size=1, max_size=10),
        st.lists(st.one_of(TEXT, st.integers(), st.none()), max_size=3),
        TEXT,
        st.none(),
        st.integers(),
    ),
    "limit": st.one_of(
        st.integers(-3, 120), st.booleans(), st.none(), st.floats(), st.just(10**30), TEXT
    ),
    "filters": st.one_of(
        st.builds(Filters, kind=TEXT, language=TEXT, template=TEXT),
        st.builds(Filters, kind=st.integers(), language=st.just(["en"])),
        TEXT,
    ),
    "system": st.one_of(st.just("nope"), st.none(), st.integers(), TEXT),
}


@st.composite
def requests(draw: st.DrawFn) -> dict[str, Any]:
    """A plausible request with none, one or every argument hostile: most examples get past
    the bounds into the routes, and each argument is attacked on its own as well."""
    request = {name: draw(strategy) for name, strategy in GOOD.items()}
    hostile = draw(st.sampled_from([None, None, "cues", "limit", "filters", "system", "all"]))
    for name in HOSTILE if hostile == "all" else [hostile] if hostile else []:
        request[name] = draw(HOSTILE[name])
    return request


@settings(
    max_examples=1000,
    deadline=None,
    derandomize=True,  # the same examples on every CI run
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(request=requests())
def test_search_raises_only_typed_errors(engine: Any, request: dict[str, Any]) -> None:
    try:
        response = engine.search(**request)
    except MamboMemeError as exc:
        event(f"refused: {type(exc).__name__}")
        return
    event("searched" if response.results else f"searched: {response.empty_reason}")
    assert isinstance(response, SearchResponse)
    assert len(response.results) <= request["limit"]
    for result in response.results:
        assert engine.items[result.item_id].eligible
