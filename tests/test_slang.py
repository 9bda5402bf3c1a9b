"""Chat spelling read as English (search/slang.py)."""

from __future__ import annotations

import pytest

from mambomeme.search.slang import ABBREVIATIONS, Slang


@pytest.fixture(scope="module")
def slang() -> Slang:
    corpus = {"cena", "john", "wifi", "realize", "see"}
    return Slang(corpus.__contains__)


@pytest.mark.parametrize(
    ("typed", "english"),
    [
        ("u cant c me", "you can't see me"),
        ("ppl be like w/ friends", "people be like with friends"),
        ("sooooo tired lol", "so tired"),
        ("nooooo", "no"),
        ("whenyourealize it", "when you realize it"),
        ("gonna cry bc ur late", "going to cry because your late"),
        ("when the wifi dies hahaha", "when the wifi dies"),
    ],
)
def test_rewrites(slang: Slang, typed: str, english: str) -> None:
    assert slang.rewrite(typed) == english


@pytest.mark.parametrize(
    "plain", ["john cena", "jon sena invisibl", "you can't see me", "lol", "distracted boyfriend"]
)
def test_plain_text_needs_no_rewrite(slang: Slang, plain: str) -> None:
    assert slang.rewrite(plain) is None


def test_a_segmentation_into_short_guesses_is_refused(slang: Slang) -> None:
    assert slang.rewrite("invisibl") is None  # not "inv i sib l"


def test_the_table_maps_to_words() -> None:
    assert all(key.strip() and value.strip() for key, value in ABBREVIATIONS.items())
