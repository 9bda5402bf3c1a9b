"""FTS5's bm25 for AND/OR of quoted tokens, from cached per-token bm25 lists, exactly.

FTS5's bm25 (ext/fts5/fts5_aux.c) scores a row for a query of phrases P1..Pn as

    rank = -1.0 * (0.0 + c1 + c2 + ... + cn),  ci = idf(Pi) * f(weighted tf of Pi in the row, D)

summed in phrase order, where idf(Pi) depends only on how many rows match Pi, D is the row's
length in tokens and avgdl is the table's; a phrase absent from the row adds exactly 0.0. So ci
is the same number whether Pi is queried alone or with others: the one-phrase query
`MATCH '"tok"'` reports rank = -ci. We fetch each token's (rowid, -ci) list from FTS5 once, keep
it in a bounded LRU cache (by postings), and add the lists in phrase order in float64 -- the same
additions FTS5 makes, so the result is bit-identical to `MATCH '"t1" OR "t2" ...'` (AND: rows
matching every phrase). Ties are broken by rowid, as `ORDER BY rank, rowid` does.

Why: FTS5 computes bm25 for every matching row before `ORDER BY rank ... LIMIT` (about 1.5 us
per row quiet, 3 under load), so an OR over common words ("man", "the") costs milliseconds on
every query, while adding cached lists costs microseconds. Fetching a list the first time costs
about 1.3 times FTS5's own one-token top-k (every row goes to Python), once per token per
process, and only from a token's second use on (`note`, `ready`): until then the query goes to
FTS5 whole, so a first query is never slower than before. Only ASCII tokens take this path (each is
one unicode61 token, so one phrase that is never empty); others go to FTS5 whole.

With a build's term lists (index/term_lists.py, `precomputed`) every plain token's list for all
columns is read from memory-mapped arrays instead, from its first use; the fetch-and-cache path
remains for column subsets (the `-no-<field>` ablations) and builds without term lists.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter, OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from mambomeme.index import fts_query

if TYPE_CHECKING:
    from mambomeme.index.term_lists import TermLists

TERM_SCORES_VERSION = "fts5-bm25-additive-1"
SEEN_LIMIT = 200_000  # tokens whose uses are counted before the counts start over
COMMON = 20  # OR: a list in more than 1/COMMON of the rows may be pruned (_union_pruned)


class TermList(NamedTuple):
    rows: np.ndarray  # int32 rowids matching the token, ascending
    contribution: np.ndarray  # float64 ci per row (= -rank of the one-token query)
    top: float  # the largest contribution (0.0 when empty): the list's MaxScore bound


def term_list(rows: np.ndarray, contribution: np.ndarray) -> TermList:
    """A TermList with its bound computed (once per list, not per query)."""
    return TermList(rows, contribution, float(contribution.max()) if len(contribution) else 0.0)


def cacheable(token: str) -> bool:
    """Tokens whose quoted form is exactly one FTS5 unicode61 token (ASCII letters/digits)."""
    return token.isascii() and token.isalnum()


class TermScores:
    """Per-token bm25 lists of one FTS5 table, cached up to `max_postings` rows in all."""

    def __init__(
        self,
        con: sqlite3.Connection,
        rows: int,
        max_postings: int,
        precomputed: TermLists | None = None,
    ) -> None:
        self._con = con
        self._rows = rows
        self._max_postings = max_postings
        self._lists = precomputed
        self._cache: OrderedDict[tuple[str, tuple[str, ...] | None], TermList] = OrderedDict()
        self._postings = 0
        self._seen: dict[tuple[str, tuple[str, ...] | None], int] = {}
        self._lock = threading.Lock()
        self.stats: Counter[str] = Counter()  # multi-token searches by path (and, or_pruned, ...)

    @property
    def enabled(self) -> bool:
        return self._max_postings > 0 or self._lists is not None

    @property
    def precomputed(self) -> bool:
        """Whether every plain token's list comes from the build (index/term_lists.py)."""
        return self._lists is not None

    def _built(self, token: str, columns: tuple[str, ...] | None) -> TermList | None:
        """The build's list for this token (all columns only), else None."""
        if columns is not None or self._lists is None:
            return None
        return self._lists.get(token)

    def _covered(self, token: str, columns: tuple[str, ...] | None) -> bool:
        """Whether `_built` has this token's list (the lists hold every plain token)."""
        return columns is None and self._lists is not None and cacheable(token)

    def cached(self, tokens: Sequence[str], columns: Sequence[str] | None) -> bool:
        """Whether every token's list is in the cache (no FTS5 work needed)."""
        cols = None if columns is None else tuple(columns)
        with self._lock:
            return all((t, cols) in self._cache or self._covered(t, cols) for t in tokens)

    def note(self, tokens: Sequence[str], columns: Sequence[str] | None) -> None:
        """Count one more use (one cue of one request) of each distinct uncached token."""
        cols = None if columns is None else tuple(columns)
        with self._lock:
            if len(self._seen) > SEEN_LIMIT:
                self._seen.clear()
            for token in set(tokens):
                key = (token, cols)
                if key not in self._cache and not self._covered(token, cols):
                    self._seen[key] = self._seen.get(key, 0) + 1

    def ready(self, tokens: Sequence[str], columns: Sequence[str] | None) -> bool:
        """Whether every token is cached or was noted in two uses or more: a list is fetched
        from a token's second use on, so a token used once (a one-shot CLI search, the first
        query after start, a rare typo) costs what FTS5 alone costs."""
        cols = None if columns is None else tuple(columns)
        with self._lock:
            return all(
                (t, cols) in self._cache
                or self._seen.get((t, cols), 0) >= 2
                or self._covered(t, cols)
                for t in tokens
            )

    def term(self, token: str, columns: Sequence[str] | None) -> TermList:
        key = (token, None if columns is None else tuple(columns))
        built = self._built(token, key[1])
        if built is not None:
            return built
        with self._lock:
            found = self._cache.get(key)
            if found is not None:
                self._cache.move_to_end(key)
                return found
        fetched = self._fetch(token, columns)
        size = len(fetched.rows)
        with self._lock:
            if key not in self._cache and size <= self._max_postings:
                self._cache[key] = fetched
                self._postings += size
                while self._postings > self._max_postings:
                    _, old = self._cache.popitem(last=False)
                    self._postings -= len(old.rows)
        return fetched

    def _fetch(self, token: str, columns: Sequence[str] | None) -> TermList:
        return fetch_term(self._con, token, columns)

    def search(
        self,
        tokens: Sequence[str],
        match_all: bool,
        columns: Sequence[str] | None,
        mask: np.ndarray,
        depth: int,
    ) -> list[tuple[int, float]]:
        """(rowid, rank) of up to `depth` rows allowed by `mask` that match every token
        (match_all) or any token, best (lowest rank) first, ties by rowid: what
        `ORDER BY rank, rowid` over `MATCH all_of(tokens)` / `any_of(tokens)` returns."""
        if not tokens:
            raise ValueError("no tokens to match")
        lists = [self.term(t, columns) for t in tokens]
        if len(lists) == 1:
            only = lists[0]
            keep = mask[only.rows]
            rows, rank = only.rows[keep], -only.contribution[keep]
        else:
            pruned = None if match_all else _union_pruned(lists, mask, self._rows, depth)
            if pruned is not None:
                rows, rank = pruned
            else:
                rows, rank = _combine(lists, match_all, mask, self._rows)
            self.stats["and" if match_all else "or_pruned" if pruned else "or_full"] += 1
        return top(rows, rank, depth)


def _combine(
    lists: Sequence[TermList], match_all: bool, mask: np.ndarray, table_rows: int
) -> tuple[np.ndarray, np.ndarray]:
    """Rows allowed by `mask` matching all/any list, ascending, with their summed rank.

    Contributions are added one list at a time in phrase order (never a vectorised reduction,
    whose summation order numpy does not promise). AND: the shortest list's eligible rows are
    looked up in the others (each list's rows ascending), so "the" costs a binary search per
    candidate, not a pass over its 364k postings. OR, few postings: over the union of their
    rows; many: over one slot per table row."""
    if match_all:
        return _intersect(lists, mask)
    postings = sum(len(lst.rows) for lst in lists)
    if postings * 8 < table_rows:
        slots = np.unique(np.concatenate([lst.rows for lst in lists]))
        where = [np.searchsorted(slots, lst.rows) for lst in lists]
    else:
        slots = np.arange(table_rows)
        where = [lst.rows for lst in lists]
    total = np.zeros(len(slots), dtype=np.float64)
    count = np.zeros(len(slots), dtype=np.int32)
    for lst, at in zip(lists, where, strict=True):  # phrase order, as FTS5 sums
        total[at] += lst.contribution
        count[at] += 1
    keep = (count == len(lists) if match_all else count > 0) & mask[slots]
    return slots[keep], -total[keep]


def fetch_term(
    con: sqlite3.Connection, token: str, columns: Sequence[str] | None = None
) -> TermList:
    """One token's list as FTS5 reports it (rowid, -rank of `MATCH '"tok"'`), rows ascending."""
    found = con.execute(
        "SELECT rowid, rank FROM items_fts WHERE items_fts MATCH ?",
        (fts_query.any_of([token], columns),),
    ).fetchall()
    if not found:
        return term_list(np.zeros(0, np.int32), np.zeros(0, np.float64))
    pairs = np.array(found, dtype=np.float64)  # rowids < 2**53 are exact in float64
    order = np.argsort(pairs[:, 0], kind="stable")  # FTS5 gives rowid order; made sure
    return term_list(pairs[order, 0].astype(np.int32), -pairs[order, 1])


def _union_pruned(
    lists: Sequence[TermList], mask: np.ndarray, table_rows: int, depth: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """OR without a pass over the common lists, when that provably changes nothing; else None.

    A row can only enter the top `depth` through a rare list (one in at most 1/COMMON of the
    rows) if the common lists' maximum contributions, summed, stay below the depth-th best total
    of the rows the rare lists reach (MaxScore, Turtle & Flood 1995): then every other row
    scores strictly worse. Those candidate rows get their exact total (every list looked up,
    added in phrase order). "the" or "man" add almost nothing to bm25, so this usually holds."""
    if depth <= 0:
        return None
    common = [len(lst.rows) * COMMON > table_rows for lst in lists]
    if all(common):  # every word is common: the shortest list alone is the candidate source
        common[min(range(len(lists)), key=lambda i: len(lists[i].rows))] = False
    if not any(common):
        return None
    rare = [lst.rows for lst, c in zip(lists, common, strict=True) if not c]
    slots = np.unique(np.concatenate(rare))
    slots = slots[mask[slots]]
    if len(slots) < depth:
        return None
    bound = sum(lst.top for lst, c in zip(lists, common, strict=True) if c)
    total = np.zeros(len(slots), dtype=np.float64)
    for lst in lists:  # phrase order, as FTS5 sums
        if len(lst.rows) == 0:
            continue
        at = np.minimum(np.searchsorted(lst.rows, slots), len(lst.rows) - 1)
        present = lst.rows[at] == slots
        total[present] += lst.contribution[at[present]]
    threshold = float(np.partition(total, len(total) - depth)[len(total) - depth])
    if not bound * (1 + 1e-9) < threshold:  # margin for float rounding in the sums
        return None
    return slots, -total


def _intersect(lists: Sequence[TermList], mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if any(len(lst.rows) == 0 for lst in lists):
        return np.zeros(0, np.int32), np.zeros(0, np.float64)
    by_size = sorted(lists, key=lambda lst: len(lst.rows))
    rows = by_size[0].rows[mask[by_size[0].rows]]
    for lst in by_size[1:]:
        at = np.minimum(np.searchsorted(lst.rows, rows), len(lst.rows) - 1)
        rows = rows[lst.rows[at] == rows]
    total = np.zeros(len(rows), dtype=np.float64)
    for lst in lists:  # phrase order, as FTS5 sums
        total += lst.contribution[np.searchsorted(lst.rows, rows)]
    return rows, -total


def top(rows: np.ndarray, rank: np.ndarray, depth: int) -> list[tuple[int, float]]:
    """The `depth` lowest (rank, rowid) pairs in that order; exact at ties on the boundary."""
    if len(rows) > depth:
        cut = np.partition(rank, depth - 1)[depth - 1] if depth > 0 else -np.inf
        near = rank <= cut
        rows, rank = rows[near], rank[near]
    order = np.lexsort((rows, rank))[:depth]
    return list(zip(rows[order].tolist(), rank[order].tolist(), strict=True))
