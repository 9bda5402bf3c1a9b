"""Cached per-token bm25 lists give FTS5's own AND/OR ranking, bit for bit (index/term_scores)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from lexical_support import fixture_cues, pairs

from mambomeme.corpus.schema import SEARCH_FIELDS
from mambomeme.index import fts_query
from mambomeme.index.lexical import LexicalIndex
from mambomeme.index.term_scores import TermList, top


@pytest.fixture(scope="module")
def index(fixture_build: Path) -> LexicalIndex:
    """The fixture corpus's real lexical index, its build's term lists not used: the per-token
    cache fetches lists from FTS5 (term_cache_postings)."""
    return LexicalIndex(fixture_build / "lexical.sqlite", term_cache_postings=100_000)


def test_same_rows_and_scores_as_fts5_for_and_or_masks_columns_depths(
    index: LexicalIndex,
) -> None:
    rnd = random.Random(20261201)
    n = len(index.ids)
    masks = [np.ones(n, bool), np.zeros(n, bool)] + [
        np.array([rnd.random() < p for _ in range(n)]) for p in (0.1, 0.5, 0.9)
    ]
    columns = [None, ["title", "ocr_text"], [f for f in SEARCH_FIELDS if f != "template"]]
    compared = nonempty = and_from_lists = 0
    for tokens in fixture_cues():
        content = fts_query.content_tokens(tokens)
        for match_all, words in ((True, tokens), (False, content), (False, tokens + tokens[:1])):
            build = fts_query.all_of if match_all else fts_query.any_of
            for mask in masks:
                for cols in columns:
                    for depth in (1, 3, 10, 100):
                        index.note_use(words, cols)
                        and_from_lists += match_all and index.terms.cached(words, cols)
                        expected = pairs(index.search(build(words, cols), mask, depth))
                        got = pairs(index.search_tokens(words, match_all, cols, mask, depth))
                        assert got == expected, (words, match_all, cols, depth)
                        compared += 1
                        nonempty += bool(expected) and len(words) > 1
    assert compared > 1000 and nonempty > 300  # multi-token queries with results were compared
    assert and_from_lists > 150  # AND from cached lists, not only from FTS5


def test_non_ascii_tokens_go_to_fts5_whole(index: LexicalIndex) -> None:
    mask = np.ones(len(index.ids), bool)
    words = ["kannst", "nicht", "sehen", "überall"]
    assert pairs(index.search_tokens(words, False, None, mask, 10)) == pairs(
        index.search(fts_query.any_of(words), mask, 10)
    )


def test_a_token_list_is_fetched_from_its_second_use_on(index: LexicalIndex) -> None:
    mask = np.ones(len(index.ids), bool)
    words = ["invisible", "wrestler"]
    index.note_use(words, ["title"])
    first = pairs(index.search_tokens(words, False, ["title"], mask, 10))
    again = pairs(index.search_tokens(words, False, ["title"], mask, 10))
    assert not index.terms.cached(words, ["title"])  # one use, searched twice: FTS5 alone
    index.note_use(words, ["title"])
    second = pairs(index.search_tokens(words, False, ["title"], mask, 10))
    assert index.terms.cached(words, ["title"]) and first == again == second and first


def test_cache_stays_within_its_postings_budget(index: LexicalIndex) -> None:
    from mambomeme.index.term_scores import TermScores

    terms = TermScores(index._con, len(index.ids), max_postings=40)
    for token in ("john", "cena", "the", "cat", "a"):
        terms.term(token, None)
    assert 0 < terms._postings <= 40
    assert terms._postings == sum(len(t.rows) for t in terms._cache.values())


def test_top_is_exact_at_ties_on_the_depth_boundary() -> None:
    rows = np.array([9, 3, 5, 1, 7, 2])
    rank = np.array([-2.0, -1.0, -1.0, -3.0, -1.0, -1.0])
    assert top(rows, rank, 3) == [(1, -3.0), (9, -2.0), (2, -1.0)]
    assert top(rows, rank, 0) == []
    empty = TermList(np.zeros(0, np.int64), np.zeros(0), 0.0)
    assert top(empty.rows, empty.contribution, 5) == []
