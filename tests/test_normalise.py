from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mambomeme.corpus.normalise import normalise


def test_nfkc_and_whitespace() -> None:
    assert normalise("  ｊｏｈｎ\t\n  cena\u00a0 ") == "john cena"
    assert normalise("ﬁre") == "fire"


def test_lone_surrogate_becomes_replacement_character() -> None:
    out = normalise("a\ud800b")
    assert out == "a\ufffdb"
    out.encode("utf-8")


def test_nul_and_controls_collapse() -> None:
    assert normalise("a\x00\x01b") == "a b"


@given(st.text())
def test_idempotent_and_encodable(text: str) -> None:
    once = normalise(text)
    assert normalise(once) == once
    once.encode("utf-8")
    assert once == once.strip()
    assert "  " not in once
