"""The lexical route: one SQLite FTS5 table, one column per search field, bm25 column weights.

Build: `build_lexical(items, path, weights)` writes `items_fts` (rowid = position of the item in
id order, so ordering by rowid is ordering by item id) and a `vocab` table of token document
frequencies used by the typo-tolerant route.

Search: MATCH on the FTS table first, `ORDER BY rank, rowid` where rank is FTS5's bm25 with our
column weights (configured once with the 'rank' option), then an eligibility mask applied to the
rowids; when too few rows survive the mask we fetch the next page (over-fetch and refill), so
each call returns `depth` eligible rows or every eligible match there is.
"""

from __future__ import annotations

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

LEXICAL_INDEX_VERSION = "fts5-unicode61-1"
TOKENIZER = "unicode61 remove_diacritics 2"


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
            [("version", LEXICAL_INDEX_VERSION), ("rank", rank), ("count", str(len(items)))],
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

    def __init__(self, path: Path) -> None:
        if not path.exists():
            raise IndexError_(f"lexical index not found: {path}")
        uri = f"file:{path.resolve()}?mode=ro"
        self._con = sqlite3.connect(uri, uri=True, check_same_thread=False)
        meta = dict(self._con.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("version") != LEXICAL_INDEX_VERSION:
            raise IndexError_(f"{path}: index version {meta.get('version')!r} is not supported")
        self.ids: list[str] = [
            r[0] for r in self._con.execute("SELECT item_id FROM ids ORDER BY row")
        ]
        self.meta = meta

    def vocabulary(self) -> dict[str, int]:
        return dict(self._con.execute("SELECT token, df FROM vocab").fetchall())

    def search(
        self, expression: str, mask: np.ndarray, depth: int, page: int = 0
    ) -> list[LexicalHit]:
        """Up to `depth` eligible rows matching `expression` (built by fts_query), best first."""
        page = page or max(depth * 2, 50)
        hits: list[LexicalHit] = []
        offset = 0
        while len(hits) < depth:
            rows = self._con.execute(
                "SELECT rowid, rank FROM items_fts WHERE items_fts MATCH ? "
                "ORDER BY rank, rowid LIMIT ? OFFSET ?",
                (expression, page, offset),
            ).fetchall()
            for row, score in rows:
                if mask[row]:
                    hits.append(LexicalHit(int(row), float(score)))
                    if len(hits) == depth:
                        break
            if len(rows) < page:
                break
            offset += page
        return hits

    def close(self) -> None:
        self._con.close()
