"""Every token's FTS5 bm25 list, precomputed beside lexical.sqlite (DVC stage index_terms).

FTS5 computes bm25 for every row a query matches before `ORDER BY rank ... LIMIT` can stop, so
on memes-full an OR with a common word ("man": 189k rows, "the": 364k) costs hundreds of ms on
every query, and fetching such a word's list at request time (index/term_scores.py) costs as
much once per process. Here each token's (rowid, -rank) list of the one-token query
`MATCH '"tok"'` -- FTS5's own numbers, so term_scores.py's additions stay bit-identical to FTS5 --
is written once at build time, for every term FTS5 itself holds (its `fts5vocab` table):

    build/<corpus>/term-lists/
        tokens.json    the terms, sorted (plain ASCII letters/digits: term_scores.cacheable)
        offsets.npy    int64, len(tokens) + 1: term i's postings are [offsets[i], offsets[i+1])
        rows.npy       int32 rowids, ascending within a term
        scores.npy     float64 contribution (= -rank of the one-token query)
        manifest.json  version, lexical.sqlite sha256 and size, counts, each file's sha256

The lists are complete: a plain token that is not in tokens.json matches no row (FTS5's
unicode61 tokenizer folds ASCII case, and query tokens are casefolded already). At open the
arrays are memory-mapped (nothing is read until a query touches a term), sizes are checked
against the manifest, and a few terms are compared exactly with FTS5, so lists from another
lexical.sqlite are refused; `verify_term_lists` checks every file's sha256.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from mambomeme.corpus.manifest import sha256_file, write_json_atomic
from mambomeme.errors import IndexError_
from mambomeme.index.term_scores import TermList, cacheable, fetch_term

TERM_LISTS_VERSION = "fts5-term-lists-1"
TERM_LISTS_DIR = "term-lists"
ARRAYS = ("offsets.npy", "rows.npy", "scores.npy")
PROBES = 4  # terms compared with FTS5 at every open ...
PROBE_MAX_DF = 64  # ... among those in at most this many rows (cheap for FTS5)


def _connect(lexical_path: Path) -> sqlite3.Connection:
    if not lexical_path.exists():
        raise IndexError_(f"lexical index not found: {lexical_path}")
    uri = f"file:{lexical_path.resolve()}?mode=ro"
    return sqlite3.connect(uri, uri=True, check_same_thread=False)


def build_term_lists(lexical_path: Path, out_dir: Path, progress: bool = True) -> dict[str, Any]:
    """Write `out_dir` (built beside it, then renamed into place) and return its manifest."""
    started = time.perf_counter()
    con = _connect(lexical_path)
    try:
        con.execute("CREATE VIRTUAL TABLE temp.terms USING fts5vocab(main, items_fts, 'row')")
        vocab = [
            (str(t), int(d))
            for t, d in con.execute("SELECT term, doc FROM temp.terms ORDER BY term")
            if cacheable(str(t))
        ]
        table_rows = int(con.execute("SELECT count(*) FROM items_fts").fetchone()[0])
        offsets = np.zeros(len(vocab) + 1, dtype=np.int64)
        offsets[1:] = np.cumsum([d for _, d in vocab])
        tmp = out_dir.with_name(out_dir.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        total = int(offsets[-1])
        rows = np.lib.format.open_memmap(tmp / "rows.npy", "w+", np.int32, (total,))
        scores = np.lib.format.open_memmap(tmp / "scores.npy", "w+", np.float64, (total,))
        for i, (token, df) in enumerate(tqdm(vocab, desc="term lists", disable=not progress)):
            found = fetch_term(con, token)
            if len(found.rows) != df:
                raise IndexError_(
                    f"{lexical_path}: term {token!r} has {len(found.rows)} rows in MATCH but "
                    f"df {df} in fts5vocab"
                )
            rows[offsets[i] : offsets[i + 1]] = found.rows
            scores[offsets[i] : offsets[i + 1]] = found.contribution
        rows.flush()
        scores.flush()
        del rows, scores
        np.save(tmp / "offsets.npy", offsets)
        (tmp / "tokens.json").write_text(json.dumps([t for t, _ in vocab]), encoding="utf-8")
        meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
    finally:
        con.close()
    manifest = {
        "version": TERM_LISTS_VERSION,
        "lexical_sha256": sha256_file(lexical_path),
        "lexical_size": lexical_path.stat().st_size,
        "lexical_rank": meta.get("rank"),
        "table_rows": table_rows,
        "terms": len(vocab),
        "postings": total,
        "files": {
            name: {"sha256": sha256_file(tmp / name), "size": (tmp / name).stat().st_size}
            for name in ("tokens.json", *ARRAYS)
        },
        "build_seconds": round(time.perf_counter() - started, 3),
    }
    write_json_atomic(tmp / "manifest.json", manifest)
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.replace(out_dir)
    return manifest


class TermLists:
    """The precomputed lists of one lexical.sqlite, memory-mapped (read-only)."""

    def __init__(self, directory: Path, con: sqlite3.Connection, lexical_path: Path) -> None:
        manifest_path = directory / "manifest.json"
        if not manifest_path.exists():
            raise IndexError_(f"{directory}: no manifest.json; rerun `dvc repro index_terms`")
        self.manifest: dict[str, Any] = json.loads(manifest_path.read_text(encoding="utf-8"))
        if self.manifest.get("version") != TERM_LISTS_VERSION:
            raise IndexError_(f"{directory}: version {self.manifest.get('version')!r} unsupported")
        if self.manifest.get("lexical_size") != lexical_path.stat().st_size:
            raise IndexError_(f"{directory} was built from another lexical.sqlite (size differs)")
        for name, entry in self.manifest["files"].items():
            path = directory / name
            if not path.exists() or path.stat().st_size != entry["size"]:
                raise IndexError_(f"{path}: missing or not the size its manifest records")
        tokens = json.loads((directory / "tokens.json").read_text(encoding="utf-8"))
        self._index = {t: i for i, t in enumerate(tokens)}
        self._tops: dict[int, float] = {}  # term -> largest contribution, filled on first use
        self._offsets = np.load(directory / "offsets.npy", allow_pickle=False)
        # plain ndarray views of the maps: slicing a np.memmap costs ~5 us, a view's ~0.3 us
        self._rows = np.asarray(np.load(directory / "rows.npy", mmap_mode="r", allow_pickle=False))
        self._scores = np.asarray(
            np.load(directory / "scores.npy", mmap_mode="r", allow_pickle=False)
        )
        if len(self._offsets) != len(tokens) + 1 or int(self._offsets[-1]) != len(self._rows):
            raise IndexError_(f"{directory}: offsets do not match tokens.json and rows.npy")
        self._probe(con, tokens, directory)

    def __len__(self) -> int:
        return len(self._index)

    def get(self, token: str) -> TermList | None:
        """The token's list (empty when no row has it); None for a token FTS5 would not read
        as one plain term (those go to FTS5 whole)."""
        if not cacheable(token):
            return None
        i = self._index.get(token.lower())
        if i is None:
            return TermList(np.zeros(0, np.int32), np.zeros(0, np.float64), 0.0)
        lo, hi = int(self._offsets[i]), int(self._offsets[i + 1])
        rows, scores = self._rows[lo:hi], self._scores[lo:hi]
        top = self._tops.get(i)
        if top is None:  # each term's bound is read once per process (dict writes are atomic)
            top = self._tops[i] = float(scores.max())
        return TermList(rows, scores, top)

    def _probe(self, con: sqlite3.Connection, tokens: list[str], directory: Path) -> None:
        """Compare a few rare terms (spread over the sorted list) with FTS5, bit for bit: every
        contribution depends on the row count and mean row length, so lists built from another
        table differ."""
        if not tokens:
            return
        small = np.flatnonzero(np.diff(self._offsets) <= PROBE_MAX_DF)  # cheap to ask FTS5
        if len(small) == 0:
            return
        picks = sorted({int(small[int(j)]) for j in np.linspace(0, len(small) - 1, PROBES)})
        for i in picks:
            want = fetch_term(con, tokens[i])
            got = self.get(tokens[i])
            assert got is not None
            if not (
                np.array_equal(got.rows, want.rows)
                and np.array_equal(got.contribution, want.contribution)
            ):
                raise IndexError_(
                    f"{directory}: term {tokens[i]!r} differs from lexical.sqlite; "
                    "rerun `dvc repro index_terms`"
                )


def verify_term_lists(directory: Path, lexical_path: Path) -> None:
    """Full check: every file's sha256 and the lexical.sqlite it was built from."""
    manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
    if manifest.get("lexical_sha256") != sha256_file(lexical_path):
        raise IndexError_(f"{directory} was built from another lexical.sqlite (sha256 differs)")
    for name, entry in manifest["files"].items():
        if sha256_file(directory / name) != entry["sha256"]:
            raise IndexError_(f"{directory / name}: sha256 differs from its manifest")
