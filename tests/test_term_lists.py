"""Precomputed term lists (index/term_lists.py): FTS5's own ranking bit for bit, complete, and
refused when they do not belong to the lexical.sqlite beside them."""

from __future__ import annotations

import random
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from lexical_support import fixture_cues, pairs

from mambomeme.corpus.schema import SEARCH_FIELDS
from mambomeme.errors import IndexError_
from mambomeme.index import fts_query
from mambomeme.index.lexical import LexicalIndex
from mambomeme.index.term_lists import TERM_LISTS_DIR, build_term_lists, verify_term_lists
from mambomeme.index.term_scores import cacheable


@pytest.fixture(scope="module")
def index(fixture_build: Path) -> LexicalIndex:
    """The fixture's lexical index reading the build's term lists, with no request-time cache."""
    return LexicalIndex(
        fixture_build / "lexical.sqlite",
        term_cache_postings=0,
        term_lists=fixture_build / TERM_LISTS_DIR,
    )


def _statements(index: LexicalIndex) -> list[str]:
    seen: list[str] = []
    index._con.set_trace_callback(seen.append)  # noqa: SLF001 - counting FTS5 statements
    return seen


def test_lists_give_fts5_ranking_bit_for_bit_and_never_ask_fts5(index: LexicalIndex) -> None:
    rnd = random.Random(20261201)
    n = len(index.ids)
    masks = [np.ones(n, bool)] + [
        np.array([rnd.random() < p for _ in range(n)]) for p in (0.1, 0.5)
    ]
    compared = nonempty = from_lists = 0
    for tokens in fixture_cues():
        content = fts_query.content_tokens(tokens)
        for match_all, words in ((True, tokens), (False, content), (False, tokens + tokens[:1])):
            build = fts_query.all_of if match_all else fts_query.any_of
            for mask in masks:
                for depth in (1, 10, 100):
                    expected = pairs(index.search(build(words), mask, depth))
                    seen = _statements(index)
                    got = pairs(index.search_tokens(words, match_all, None, mask, depth))
                    index._con.set_trace_callback(None)  # noqa: SLF001
                    assert got == expected, (words, match_all, depth)
                    if all(cacheable(w) for w in words):
                        assert seen == [], "a first use of plain tokens went to FTS5"
                        from_lists += 1
                    compared += 1
                    nonempty += bool(expected) and len(words) > 1
    assert compared > 300 and nonempty > 100 and from_lists > 250
    paths = index.terms.stats  # every path of term_scores was compared: AND, pruned and full OR
    assert paths["and"] > 50 and paths["or_pruned"] > 20 and paths["or_full"] > 20, paths


def test_column_subsets_still_match_fts5_through_fts5(index: LexicalIndex) -> None:
    mask = np.ones(len(index.ids), bool)
    cols = [f for f in SEARCH_FIELDS if f != "template"]
    for tokens in fixture_cues()[:12]:
        got = pairs(index.search_tokens(tokens, False, cols, mask, 10))
        assert got == pairs(index.search(fts_query.any_of(tokens, cols), mask, 10))


def test_lists_are_complete(fixture_build: Path, index: LexicalIndex) -> None:
    con = sqlite3.connect(fixture_build / "lexical.sqlite")
    con.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, items_fts, 'row')")
    terms = con.execute("SELECT term, doc FROM temp.v").fetchall()
    lists = index.terms._lists  # noqa: SLF001
    assert lists is not None
    plain = [(t, d) for t, d in terms if t.isascii() and t.isalnum()]
    assert len(lists) == len(plain) > 1000
    for term, doc in plain:
        found = lists.get(term)
        assert found is not None and len(found.rows) == doc
    absent = lists.get("zzqxnotaword")
    assert absent is not None and len(absent.rows) == 0
    assert lists.get("überall") is None  # not one plain term: FTS5 decides


def test_lists_of_another_lexical_index_are_refused(
    fixture_build: Path, tmp_path: Path, params: dict[str, Any]
) -> None:
    from mambomeme.index.build import build_lexical_index

    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(fixture_build / "items.parquet", other / "items.parquet")
    manifest = tmp_path / "corpus.json"
    manifest.write_text("{}")
    weights = {f: 1.0 for f in params["lexical"]["weights"]}  # other weights: other bm25
    build_lexical_index(other, manifest, weights)
    shutil.copytree(fixture_build / TERM_LISTS_DIR, other / TERM_LISTS_DIR)
    with pytest.raises(IndexError_, match="another lexical.sqlite|differs from lexical.sqlite"):
        LexicalIndex(other / "lexical.sqlite", 0, other / TERM_LISTS_DIR)
    with pytest.raises(IndexError_, match="another lexical.sqlite"):
        verify_term_lists(other / TERM_LISTS_DIR, other / "lexical.sqlite")
    build_term_lists(other / "lexical.sqlite", other / TERM_LISTS_DIR, progress=False)
    LexicalIndex(other / "lexical.sqlite", 0, other / TERM_LISTS_DIR)  # rebuilt: accepted
    verify_term_lists(other / TERM_LISTS_DIR, other / "lexical.sqlite")


def test_damaged_files_are_named(fixture_build: Path, tmp_path: Path) -> None:
    lists = tmp_path / TERM_LISTS_DIR
    shutil.copytree(fixture_build / TERM_LISTS_DIR, lists)
    lexical = fixture_build / "lexical.sqlite"
    scores = lists / "scores.npy"
    data = bytearray(scores.read_bytes())
    data[-3] ^= 0xFF
    scores.write_bytes(bytes(data))
    with pytest.raises(IndexError_, match="scores.npy: sha256 differs"):
        verify_term_lists(lists, lexical)
    rows = lists / "rows.npy"
    rows.write_bytes(rows.read_bytes()[:-8])
    with pytest.raises(IndexError_, match="rows.npy: missing or not the size"):
        LexicalIndex(lexical, 0, lists)


def test_engine_reads_the_builds_term_lists(lexical_engine: Any) -> None:
    assert lexical_engine.lexical.terms.precomputed
    seen = _statements(lexical_engine.lexical)
    response = lexical_engine.search(["john cena you can't see me"], system="bm25+typo")
    lexical_engine.lexical._con.set_trace_callback(None)  # noqa: SLF001
    assert response.results and not [s for s in seen if "MATCH" in s]
