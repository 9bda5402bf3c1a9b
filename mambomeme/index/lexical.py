"""The lexical route: one SQLite FTS5 table, one column per search field, bm25 column weights.

Build: `build_lexical(items, path, weights)` writes `items_fts` (rowid = position of the item in
id order, so ordering by rowid is ordering by item id) and a `vocab` table of token document
frequencies used by the typo-tolerant route.

Search: MATCH on the FTS table first, `ORDER BY rank, rowid` where rank is FTS5's bm25 with our
column weights (configured once with the 'rank' option), then an eligibility mask applied to the
rowids; when too few rows survive the mask we read on past the first page, so each call returns
`depth` eligible rows or every eligible match there is. `search_tokens` gives the same answer
for AND/OR of quoted tokens from per-token bm25 lists (index/term_scores.py: precomputed at build
time by index/term_lists.py, or fetched and cached), without FTS5 scoring every matching row on
every query.
"""

from __future__ import annotations

import functools
import hashlib
import sqlite3
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from mambomeme.corpus.normalise import normalise
from mambomeme.corpus.schema import SEARCH_FIELDS, Item
from mambomeme.errors import IndexError_
from mambomeme.index import fts_query
from mambomeme.index.term_lists import TermLists
from mambomeme.index.term_scores import TermScores, cacheable

LEXICAL_INDEX_VERSION = "fts5-unicode61-1"
TOKENIZER = "unicode61 remove_diacritics 2"


def ids_digest(ids: Sequence[str]) -> str:
    """sha256 of the item ids in row order, one per line (recorded in the index's meta)."""
    return hashlib.sha256("\n".join(ids).encode("utf-8")).hexdigest()


class LexicalHit(NamedTuple):
    row: int
    score: float  # bm25 as SQLite reports it: lower (more negative) is better


def _column_list() -> str:
    return ", ".join(SEARCH_FIELDS)


def build_lexical(items: Sequence[Item], path: Path, weights: Mapping[str, float]) -> None:
    """Write a fresh index at `path` (atomically: built beside it, then renamed)."""
    missing = [f for f in SEARCH_FIELDS if f not in weights]
    if missing:
        raise IndexError_(f"lexical weights missing for fields: {missing}")
    tmp = path.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    con = sqlite3.connect(tmp)
    try:
        con.execute(
            f"CREATE VIRTUAL TABLE items_fts USING fts5({_column_list()}, tokenize='{TOKENIZER}')"
        )
        placeholders = ", ".join("?" for _ in SEARCH_FIELDS)
        con.executemany(
            f"INSERT INTO items_fts(rowid, {_column_list()}) VALUES (?, {placeholders})",
            (
                (row, *(normalise(item.field_text(f)) for f in SEARCH_FIELDS))
                for row, item in enumerate(items)
            ),
        )
        rank = "bm25(" + ", ".join(repr(float(weights[f])) for f in SEARCH_FIELDS) + ")"
        con.execute("INSERT INTO items_fts(items_fts, rank) VALUES ('rank', ?)", (rank,))
        con.execute("CREATE TABLE ids (row INTEGER PRIMARY KEY, item_id TEXT NOT NULL UNIQUE)")
        con.executemany("INSERT INTO ids VALUES (?, ?)", ((r, it.id) for r, it in enumerate(items)))
        con.execute("CREATE TABLE vocab (token TEXT PRIMARY KEY, df INTEGER NOT NULL)")
        con.executemany("INSERT INTO vocab VALUES (?, ?)", sorted(_vocabulary(items).items()))
        con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        con.executemany(
            "INSERT INTO meta VALUES (?, ?)",
            [
                ("version", LEXICAL_INDEX_VERSION),
                ("rank", rank),
                ("count", str(len(items))),
                ("ids_sha256", ids_digest([it.id for it in items])),
            ],
        )
        con.execute("INSERT INTO items_fts(items_fts) VALUES ('optimize')")
        con.commit()
    finally:
        con.close()
    tmp.replace(path)


def _vocabulary(items: Iterable[Item]) -> Counter[str]:
    df: Counter[str] = Counter()
    for item in items:
        text = " ".join(item.field_text(f) for f in SEARCH_FIELDS)
        df.update(set(fts_query.tokenize_all(text)))
    return df


class LexicalIndex:
    """Read-only access to a built lexical index."""

    def __init__(
        self, path: Path, term_cache_postings: int = 0, term_lists: Path | None = None
    ) -> None:
        """`term_lists`: a term-lists folder built from this file (index/term_lists.py); every
        plain token's bm25 list then comes from it, none is fetched from FTS5 at request time."""
        if not path.exists():
            raise IndexError_(f"lexical index not found: {path}")
        uri = f"file:{path.resolve()}?mode=ro"
        self._con = sqlite3.connect(uri, uri=True, check_same_thread=False)
        meta = dict(self._con.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("version") != LEXICAL_INDEX_VERSION:
            raise IndexError_(f"{path}: index version {meta.get('version')!r} is not supported")
        self.meta = meta
        self.count = int(meta["count"])
        lists = None if term_lists is None else TermLists(term_lists, self._con, path)
        self.terms = TermScores(self._con, self.count, term_cache_postings, lists)

    @functools.cached_property
    def ids(self) -> list[str]:
        """Item id of every row (read on first use: 0.3 s on memes-full)."""
        return [r[0] for r in self._con.execute("SELECT item_id FROM ids ORDER BY row")]

    def same_ids(self, ids: Sequence[str]) -> bool:
        """Whether the rows are these items in this order (by digest when the build has one)."""
        if "ids_sha256" in self.meta:
            return len(ids) == self.count and ids_digest(ids) == self.meta["ids_sha256"]
        return self.ids == list(ids)

    def vocabulary(self) -> dict[str, int]:
        return dict(self._con.execute("SELECT token, df FROM vocab").fetchall())

    def search(
        self, expression: str, mask: np.ndarray, depth: int, page: int = 0
    ) -> list[LexicalHit]:
        """Up to `depth` eligible rows matching `expression` (built by fts_query), best first.

        The first page is read with a LIMIT; if the mask leaves too few, the same statement
        order is read on from there to the end (one more scoring pass, not one per page)."""
        page = page or max(depth * 2, 50)
        hits: list[LexicalHit] = []
        if depth <= 0:
            return hits
        sql = "SELECT rowid, rank FROM items_fts WHERE items_fts MATCH ? ORDER BY rank, rowid"
        rows = self._con.execute(sql + " LIMIT ?", (expression, page)).fetchall()
        if self._take(rows, mask, depth, hits) or len(rows) < page:
            return hits
        rest = self._con.execute(sql + " LIMIT -1 OFFSET ?", (expression, page))
        while len(rows := rest.fetchmany(page)) > 0:
            if self._take(rows, mask, depth, hits):
                break
        rest.close()
        return hits

    @staticmethod
    def _take(
        rows: list[tuple[int, float]], mask: np.ndarray, depth: int, hits: list[LexicalHit]
    ) -> bool:
        """Append the eligible rows to `hits` until it holds `depth`; True once it does."""
        for row, score in rows:
            if mask[row]:
                hits.append(LexicalHit(int(row), float(score)))
                if len(hits) == depth:
                    return True
        return False

    def note_use(self, tokens: Sequence[str], columns: Sequence[str] | None) -> None:
        """Count a use of these tokens (once per cue and request, by the routes)."""
        self.terms.note(tokens, columns)

    def search_tokens(
        self,
        tokens: Sequence[str],
        match_all: bool,
        columns: Sequence[str] | None,
        mask: np.ndarray,
        depth: int,
    ) -> list[LexicalHit]:
        """`search(all_of(tokens, columns))` (match_all) or `search(any_of(...))`, same rows and
        scores, from per-token lists when every token is plain ASCII and each is precomputed
        (term lists), cached or noted in two uses (`note_use`, term_cache_postings > 0)."""
        plain = self.terms.enabled and all(cacheable(t) for t in tokens)
        if not plain or not self.terms.ready(tokens, columns):
            build = fts_query.all_of if match_all else fts_query.any_of
            return self.search(build(tokens, columns), mask, depth)
        found = self.terms.search(tokens, match_all, columns, mask, depth)
        return list(map(LexicalHit._make, found))

    def close(self) -> None:
        self._con.close()
