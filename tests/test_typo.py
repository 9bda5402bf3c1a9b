"""The typo corrector against a plain scan of the whole vocabulary (its definition)."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from mambomeme.index import fts_query
from mambomeme.index.fts_query import STOPWORDS
from mambomeme.search.typo import RATIO, TypoCorrector, max_edits, phonetic_key

ROOT = Path(__file__).resolve().parents[1]


def reference(vocabulary: Mapping[str, int], tokens: Sequence[str]) -> dict[str, list[str]]:
    """The corrector as first written: every token against the whole vocabulary."""
    df = {t: n for t, n in vocabulary.items() if len(t) >= 3 and t.isalpha() and t not in STOPWORDS}
    choices = sorted(df)
    found: dict[str, list[str]] = {}
    for token in tokens:
        if len(token) < 3 or token in STOPWORDS or not token.isalpha():
            continue
        own = df.get(token, 0)
        matches = process.extract(
            token, choices, scorer=Levenshtein.distance, score_cutoff=max_edits(token), limit=None
        )
        sound = phonetic_key(token)
        floor = max(1, RATIO * own)
        better = [
            (phonetic_key(cand) != sound, dist, -df[cand], cand)
            for cand, dist, _ in matches
            if cand != token and df[cand] >= floor
        ]
        if better:
            found[token] = [cand for *_, cand in sorted(better)[:3]]
    return found


def variants(token: str, rnd: random.Random, alphabet: str) -> list[str]:
    """One- and two-edit misspellings of `token` (deletion, substitution, insertion, swap)."""
    out = []
    for _ in range(2):
        word = token
        for _ in range(rnd.choice([1, 2])):
            i = rnd.randrange(len(word))
            edit = rnd.choice("dsit")
            if edit == "d" and len(word) > 1:
                word = word[:i] + word[i + 1 :]
            elif edit == "s":
                word = word[:i] + rnd.choice(alphabet) + word[i + 1 :]
            elif edit == "i":
                word = word[:i] + rnd.choice(alphabet) + word[i:]
            elif i + 1 < len(word):
                word = word[:i] + word[i + 1] + word[i] + word[i + 2 :]
        out.append(word)
    return out


@pytest.fixture(scope="module")
def fixture_vocabulary(tmp_path_factory: pytest.TempPathFactory) -> dict[str, int]:
    """The document frequencies of the fixture corpus, as the lexical index stores them."""
    from mambomeme.corpus.ingest import ingest
    from mambomeme.index.build import build_lexical_index
    from mambomeme.index.lexical import LexicalIndex

    build = tmp_path_factory.mktemp("typo-build")
    manifest = build / "corpus-fixture.json"
    config = {"source": "fixture", "path": str(ROOT / "fixture")}
    ingest("fixture", config, build, manifest, strict=True, knowledge_dir=ROOT / "knowledge")
    build_lexical_index(build, manifest, {f: 1.0 for f in _search_fields()})
    index = LexicalIndex(build / "lexical.sqlite")
    try:
        return index.vocabulary()
    finally:
        index.close()


def _search_fields() -> tuple[str, ...]:
    from mambomeme.corpus.schema import SEARCH_FIELDS

    return SEARCH_FIELDS


def _fixture_query_tokens() -> list[str]:
    import json

    tokens = ["jon", "sena", "catt", "disater", "grumpy", "john", "cena", "invisible"]
    for line in (ROOT / "benchmarks" / "fixture" / "queries.jsonl").read_text().splitlines():
        if line.strip():
            tokens += fts_query.tokenize(str(json.loads(line)["text"]))
    return tokens


def test_same_corrections_as_the_full_scan_on_the_fixture_vocabulary(
    fixture_vocabulary: dict[str, int],
) -> None:
    rnd = random.Random(20261201)
    words = sorted(fixture_vocabulary)
    tokens = [*words, *_fixture_query_tokens()]
    for word in rnd.sample(words, min(400, len(words))):
        tokens += variants(word, rnd, "abcdefghijklmnopqrstuvwxyz")
    corrector = TypoCorrector(fixture_vocabulary)
    expected = reference(fixture_vocabulary, tokens)
    assert corrector.corrections(tokens) == expected
    assert len(expected) > 50  # corrections were really offered
    assert expected["sena"][0] == "cena" and "john" in expected["jon"]


def test_same_corrections_on_a_crowded_vocabulary_with_tied_frequencies() -> None:
    """Few letters, many near neighbours, equal dfs: every ordering key is exercised."""
    rnd = random.Random(7)
    vocabulary = {
        "".join(rnd.choice("abcfk") for _ in range(rnd.randint(2, 8))): rnd.choice([1, 2, 3, 30])
        for _ in range(3000)
    }
    vocabulary.update({"the": 500, "it's": 40, "x2y": 40})  # never offered
    tokens = list(vocabulary)
    tokens += ["".join(rnd.choice("abcfkq") for _ in range(rnd.randint(1, 9))) for _ in range(600)]
    corrector = TypoCorrector(vocabulary)
    expected = reference(vocabulary, tokens)
    assert corrector.corrections(tokens) == expected
    assert sum(len(v) == 3 for v in expected.values()) > 100


def test_in_vocabulary_words_are_corrected_only_to_much_more_frequent_ones() -> None:
    corrector = TypoCorrector({"cat": 100, "cart": 9, "catt": 5, "bat": 1000, "bart": 95})
    assert corrector.corrections(["cat", "catt", "cart", "bart"]) == {
        "cat": ["bat"],  # 1000 >= 10 x 100; cart and catt are rarer
        "catt": ["cat"],  # cart (9) is not 10 x 5, bat is two edits away (one allowed)
        "cart": ["cat", "bart"],  # both >= 10 x 9, both one edit: higher df first
        "bart": ["bat"],  # 1000 >= 10 x 95
    }


def test_sound_alike_comes_before_frequency() -> None:
    corrector = TypoCorrector({"cena": 50, "sena": 1, "pena": 500, "jena": 500})
    assert corrector.corrections(["sena"]) == {"sena": ["cena", "jena", "pena"]}
