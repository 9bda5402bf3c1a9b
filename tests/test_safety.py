"""Safety policy v1 classifier: lexicon matching, obfuscations, the safe classes, overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from mambomeme.corpus import safety
from mambomeme.corpus.safety import SafetyConfigError, classify, load_classifier, parse_lexicon


@pytest.mark.parametrize(
    "text",
    [
        "damn it",
        "wtf is this",
        "i am so pissed right now",
        "what the f*** / holy sh*t",
        "that fart was legendary",
        "me after eating beans: poop",
        "when you die and nobody comes to the funeral",
        "we are all going to die someday",
        "got stoned and ate the whole fridge",
        "one more beer",
        "the president gives a speech",
        "you're an idiot, bro",
        "the hero kills the dragon in the movie",
        "bob the builder",
        "an essex village",
        "the cocktail party",
        "a class analysis",
        "scunthorpe united",
        "niger river",
        "john cena / you can't see me",
    ],
)
def test_policy_safe_examples_are_safe(text: str) -> None:
    decision = classify(text)
    assert decision.safety == "safe", decision


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("send nudes", "1"),
        ("watching porn again", "1"),
        ("s e x", "1"),
        ("p.o.r.n", "1"),
        ("s3x", "1"),
        ("seeeeeex", "1"),
        ("boooobs", "1"),
        ("blow job", "1"),
        ("blowjob", "1"),
        ("masturbating", "1"),
        ("sex with a 12 year old", "2"),
        ("he is a pedo", "2"),
        ("n*gga", "3"),
        ("f4ggot", "3"),
        ("retarded", "3"),
        ("that's so gay", "3"),
        ("black people be like", "3"),
        ("black-people be like", "3"),
        ("beheading video", "4"),
        ("9/11 was fun", "4"),
        ("just kill yourself", "5"),
        ("k y s", "5"),
        ("dox him", "6"),
        ("snorting cocaine", "7"),
    ],
)
def test_unsafe_examples_and_obfuscations(text: str, category: str) -> None:
    decision = classify(text)
    assert (decision.safety, decision.category) == ("unsafe", category), decision


def test_every_field_is_checked() -> None:
    assert classify("title", "", "", "nude").safety == "unsafe"
    assert classify("title", "", "a joke about porn", "").safety == "unsafe"
    assert classify("title", "sexy", "", "").safety == "unsafe"


def test_minor_terms_alone_are_safe() -> None:
    assert classify("my kid drew a cat").safety == "safe"
    assert classify("a 5 year old").safety == "safe"


def test_lexicon_file_parses_and_rejects_bad_lines() -> None:
    entries = parse_lexicon((safety.DEFAULT_DIR / safety.LEXICON_FILE).read_text())
    assert len(entries) > 100
    assert {e.category for e in entries} == set(safety.CATEGORIES) | {safety.MINOR}
    with pytest.raises(SafetyConfigError, match="unknown category"):
        parse_lexicon("9 word")
    with pytest.raises(SafetyConfigError, match="duplicate"):
        parse_lexicon("1 word\n1 word")
    with pytest.raises(SafetyConfigError, match="pattern"):
        parse_lexicon("1 wo(rd")


def test_overrides_apply_last(tmp_path: Path) -> None:
    (tmp_path / "lexicon-v1.txt").write_text("1 spicy\n")
    (tmp_path / "overrides.csv").write_text(
        "item_id,safety,reason\nfixture:1,safe,reviewed: cooking\nfixture:2,unsafe,reviewed\n"
    )
    classifier = load_classifier(tmp_path)
    assert classifier.classify("spicy food").safety == "unsafe"
    assert classifier.classify("spicy food", item_id="fixture:1").safety == "safe"
    assert classifier.classify("plain", item_id="fixture:2").safety == "unsafe"
    assert classifier.classify("plain", item_id="fixture:3").safety == "safe"


def test_bad_overrides_raise(tmp_path: Path) -> None:
    (tmp_path / "lexicon-v1.txt").write_text("1 spicy\n")
    (tmp_path / "overrides.csv").write_text("item_id,safety,reason\nx,maybe,?\n")
    with pytest.raises(SafetyConfigError, match="overrides.csv:2"):
        load_classifier(tmp_path)


def test_policy_version() -> None:
    assert safety.POLICY_VERSION == "safety-v1"
