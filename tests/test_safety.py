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
        "café, naïve résumé",  # accents fold to plain letters, no lexicon word appears
        "Pokémon ＧＯ",
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
        ("you like nudity", "1"),
        ("imgflip and $ËXÝ time", "1"),  # accents fold: "$exy" reads as "sexy"
        ("ｓｅｘ", "1"),  # fullwidth forms fold
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
    assert set(safety.CATEGORIES) | {safety.MINOR} <= {e.category for e in entries}
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


@pytest.mark.parametrize(
    "text",
    [
        # mild profanity and crude bodily humour
        "this damn printer jammed again",
        "my cat is so pissed at the vacuum",
        "wtf did i just watch",
        "what the f*** was that, holy sh*t",
        "this code sucks",
        "he farted in the elevator and left",
        "kick ass performance last night",
        # dark humour about death
        "me at my own funeral waiting for someone to laugh",
        "grandpa said he'd die before learning email, and he kept his word",
        # politics and public figures without slurs
        "the senator promised lower taxes and raised them instead",
        "abortion debate again at thanksgiving dinner",
        "the president pronounces nuclear wrong every single time",
        # alcohol and stoned jokes, insults between friends, film violence
        "third beer in and i am a philosopher",
        "got stoned and watched the fridge for an hour",
        "you absolute donkey, you forgot my birthday",
        "the hero shoots the robot in the final battle",
        "curiosity killed the cat, satisfaction brought it back",
        "this meme is too hard on monday mornings",
    ],
)
def test_policy_safe_side_stays_safe(text: str) -> None:
    decision = classify(text)
    assert decision.safety == "safe", decision


@pytest.mark.parametrize(
    ("text", "category"),
    [
        # 1 sexual content and innuendo
        ("she said toss my salad and i brought lettuce", "1"),
        ("i nearly reached climax watching the cooking show", "1"),
        ("caught masterbaiting by my roommate", "1"),
        ("nice butt, come to my place", "1"),
        ("slap her ass on the way out", "1"),
        ("netflix and chill tonight?", "1"),
        ("thats what she said", "1"),
        # 2 sexualising minors: a sexual hit with a child word, or a term alone
        ("sexy toddler pageant", "2"),
        ("the altar boy was nervous", "2"),
        # 3 hate: slurs with obfuscation, stereotype talk
        ("typical l1btard logic", "3"),
        ("there are only 2 genders", "3"),
        ("a woman is like a microwave", "3"),
        ("here come the refugees", "3"),
        ("the n word again", "3"),
        ("third world kid finds clean water", "3"),
        # 4 violence, cruelty to animals
        ("they murdered him in the street", "4"),
        ("kick the little puppy down the stairs", "4"),
        ("cops shoot a guy again", "4"),
        # 5 self-harm encouragement
        ("if you believe that, go die", "5"),
        ("do us a favour and kill yourself", "5"),
        ("go and shoot yourself", "5"),
        # 6 doxxing
        ("doxxing my neighbour for fun", "6"),
        # 7 hard drugs
        ("give me some crack and i will vote", "7"),
        ("stole grandma's pain medication", "7"),
    ],
)
def test_policy_categories_unsafe(text: str, category: str) -> None:
    decision = classify(text)
    assert (decision.safety, decision.category) == ("unsafe", category), decision


def test_combo_needs_both_tags_close_together() -> None:
    # an animal and a cruelty verb far apart, or one of them alone, are not unsafe
    assert classify("my puppy is the best").safety == "safe"
    assert classify("kick the ball").safety == "safe"
    far = "my puppy sleeps all day on the sofa while i go out to play football and kick"
    assert classify(far).safety == "safe"
    assert classify("kick my puppy").category == "4"
    # "third world" with a poverty word anywhere in the item
    assert classify("third world kid", "", "", "").safety == "safe"
    assert classify("third world kid", "finally shoes").category == "3"


def test_combos_file_parses_and_rejects_bad_lines(tmp_path: Path) -> None:
    combos = safety.parse_combos((safety.DEFAULT_DIR / safety.COMBOS_FILE).read_text())
    assert ("1", "minor", "2") in {(c.first, c.second, c.category) for c in combos}
    with pytest.raises(SafetyConfigError, match="combos-v1.txt:1"):
        safety.parse_combos("animal cruelty 4")
    with pytest.raises(SafetyConfigError, match="category must be 1-7"):
        safety.parse_combos("animal cruelty x 4")
    # a qualifier tag no combo uses is an error (it could never make anything unsafe)
    (tmp_path / "lexicon-v1.txt").write_text("1 spicy\nanimal dog\n")
    with pytest.raises(SafetyConfigError, match="qualifier 'animal' is in no combo"):
        load_classifier(tmp_path)
    (tmp_path / "combos-v1.txt").write_text("animal cruelty 4 3\n")
    with pytest.raises(SafetyConfigError, match="tag 'cruelty' has no patterns"):
        load_classifier(tmp_path)
    (tmp_path / "lexicon-v1.txt").write_text("1 spicy\nanimal dog\ncruelty boil\n")
    classifier = load_classifier(tmp_path)
    assert classifier.classify("boil the dog").category == "4"
    assert classifier.classify("a dog").safety == "safe"


def test_a_pattern_may_serve_two_tags(tmp_path: Path) -> None:
    (tmp_path / "lexicon-v1.txt").write_text("1 spicy\na eat\nb eat\nc plate\n")
    (tmp_path / "combos-v1.txt").write_text("a c 4 2\nb c 5 2\n")
    decision = load_classifier(tmp_path).classify("eat the plate")
    assert (decision.safety, decision.category) == ("unsafe", "4")


def test_ingest_safety_params_reach_the_corpus_config() -> None:
    from mambomeme.config import corpus_config

    params = {
        "base": {"corpus": "c"},
        "corpora": {"c": {"source": "fixture"}, "d": {"source": "x", "safety": {"dir": "y"}}},
        "ingest": {"safety": {"profanity_threshold": 0.9}},
    }
    assert corpus_config(params)[1]["safety"] == {"profanity_threshold": 0.9}
    assert corpus_config(params, "d")[1]["safety"] == {"dir": "y"}
