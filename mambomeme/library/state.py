"""The library's state store: what each file is and what was read from it, written as it goes.

One SQLite file (state.sqlite). `files` has one row per image path (its folder, size, mtime,
content sha256, metadata from a sidecar or metadata.csv, or the reason it was skipped);
`images` has one row per content sha256 (perceptual hash, OCR text and engine). Every file is
committed as soon as it is scanned, so a killed `add` loses at most the file in progress and
the next run resumes; an image's OCR is keyed by its bytes, so a renamed or copied file is not
read again. The search build is always rebuilt from these rows (library/build.py).

Paths are the file system's own: a name that is not UTF-8 arrives as a str with surrogate
escapes (os.fsdecode), which SQLite's text cannot hold; it is stored as a BLOB of its bytes
(os.fsencode) in the same column and read back as the same str (`_stored`, `_loaded`). A valid
UTF-8 path is stored as text, as before, so an existing state needs no change.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STATE_VERSION = "library-state-1"
OVERRIDES = ("allow", "deny")
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY,      -- absolute
    folder TEXT NOT NULL,       -- the added folder it is under
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sidecar TEXT NOT NULL,      -- signature of its metadata sources (names, sizes, mtimes)
    sha256 TEXT,                -- NULL when skipped
    metadata TEXT NOT NULL,     -- JSON object
    error TEXT                  -- why it is skipped, else NULL
);
CREATE TABLE IF NOT EXISTS overrides (
    path TEXT PRIMARY KEY,      -- absolute (a BLOB when not UTF-8, as in files)
    decision TEXT NOT NULL      -- allow | deny: the owner's word over the safety mask
);
CREATE TABLE IF NOT EXISTS images (
    sha256 TEXT PRIMARY KEY,
    phash TEXT NOT NULL,
    ocr_text TEXT,              -- NULL: not read (metadata gave the text, or no engine)
    ocr_engine TEXT NOT NULL    -- rapidocr | tesseract | none | failed: <reason>
);
"""


@dataclass(frozen=True)
class FileRow:
    path: str
    folder: str
    size: int
    mtime_ns: int
    sidecar: str
    sha256: str | None
    metadata: dict[str, Any]
    error: str | None


@dataclass(frozen=True)
class ImageRow:
    sha256: str
    phash: str
    ocr_text: str | None
    ocr_engine: str


class StateStore:
    """The open state file (one writer: the `add`/`remove` command that opened it)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(str(path), isolation_level=None)
        self._db.execute("PRAGMA journal_mode=DELETE")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(SCHEMA)
        version = self._db.execute("SELECT value FROM meta WHERE key='version'").fetchone()
        if version is None:
            self._db.execute("INSERT INTO meta VALUES ('version', ?)", (STATE_VERSION,))
        elif version[0] != STATE_VERSION:  # a cache: an older layout is rebuilt from scratch
            self._db.executescript("DELETE FROM files; DELETE FROM images;")
            self._db.execute("UPDATE meta SET value=? WHERE key='version'", (STATE_VERSION,))

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> StateStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- files ---------------------------------------------------------------------------
    def files(self, folder: str | None = None) -> dict[str, FileRow]:
        query = "SELECT * FROM files" + (" WHERE folder = ?" if folder is not None else "")
        rows = self._db.execute(query, () if folder is None else (_stored(folder),)).fetchall()
        return {_loaded(row[0]): _file_row(row) for row in rows}

    def put_file(self, row: FileRow) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                _stored(row.path),
                _stored(row.folder),
                row.size,
                row.mtime_ns,
                row.sidecar,
                row.sha256,
                json.dumps(row.metadata, sort_keys=True, ensure_ascii=False, default=str),
                row.error,
            ),
        )

    def drop_files(self, paths: list[str]) -> None:
        self._db.executemany("DELETE FROM files WHERE path = ?", [(_stored(p),) for p in paths])

    def drop_folder(self, folder: str) -> int:
        return self._db.execute("DELETE FROM files WHERE folder = ?", (_stored(folder),)).rowcount

    # -- the owner's safety overrides ------------------------------------------------------
    def overrides(self) -> dict[str, str]:
        """path -> allow | deny (`mambomeme library allow/deny PATH`)."""
        rows = self._db.execute("SELECT path, decision FROM overrides").fetchall()
        return {_loaded(path): str(decision) for path, decision in rows}

    def put_override(self, path: str, decision: str) -> None:
        if decision not in OVERRIDES:
            raise ValueError(f"override must be one of {OVERRIDES}, not {decision!r}")
        self._db.execute(
            "INSERT OR REPLACE INTO overrides VALUES (?, ?)", (_stored(path), decision)
        )

    # -- images --------------------------------------------------------------------------
    def image(self, sha256: str) -> ImageRow | None:
        row = self._db.execute("SELECT * FROM images WHERE sha256 = ?", (sha256,)).fetchone()
        return None if row is None else ImageRow(*row)

    def put_image(self, row: ImageRow) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO images VALUES (?, ?, ?, ?)",
            (row.sha256, row.phash, row.ocr_text, row.ocr_engine),
        )

    def prune_images(self) -> int:
        """Forget images no file names any more (their OCR text goes with the file)."""
        return self._db.execute(
            "DELETE FROM images WHERE sha256 NOT IN "
            "(SELECT sha256 FROM files WHERE sha256 IS NOT NULL)"
        ).rowcount

    # -- the whole -----------------------------------------------------------------------
    def indexed(self) -> Iterator[tuple[FileRow, ImageRow]]:
        """Every file that was read, with its image row, in path order."""
        rows = self._db.execute(
            "SELECT f.*, i.* FROM files f JOIN images i ON f.sha256 = i.sha256 "
            "WHERE f.error IS NULL ORDER BY f.path"
        ).fetchall()
        for row in rows:
            yield _file_row(row[:8]), ImageRow(*row[8:])

    def digest(self) -> str:
        """sha256 of everything a build is made from (paths, hashes, metadata, OCR text)."""
        h = hashlib.sha256(STATE_VERSION.encode())
        for file, image in self.indexed():
            text = json.dumps(
                [file.path, file.sha256, file.metadata, image.phash, image.ocr_text],
                sort_keys=True,
                ensure_ascii=False,
                default=str,
            )
            h.update(text.encode("utf-8", "surrogatepass") + b"\n")
        overrides = sorted(self.overrides().items())
        if overrides:  # a library without overrides keeps the digest it had before them
            h.update(json.dumps(overrides).encode("ascii"))
        return h.hexdigest()

    def counts(self) -> dict[str, int]:
        files, skipped = self._db.execute(
            "SELECT COUNT(*), COUNT(*) FILTER (WHERE error IS NOT NULL) FROM files"
        ).fetchone()
        (images,) = self._db.execute("SELECT COUNT(*) FROM images").fetchone()
        (unread,) = self._db.execute(
            "SELECT COUNT(*) FROM images WHERE ocr_engine NOT IN ('rapidocr', 'tesseract')"
        ).fetchone()
        return {"files": files, "skipped": skipped, "images": images, "without_ocr": unread}


def _file_row(row: tuple[Any, ...]) -> FileRow:
    path, folder, size, mtime_ns, sidecar, sha, metadata, error = row
    return FileRow(
        _loaded(path), _loaded(folder), size, mtime_ns, sidecar, sha, json.loads(metadata), error
    )


def _stored(path: str) -> str | bytes:
    """A path as the state stores it: text when it is UTF-8, else its bytes (module doc)."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(path)
    return path


def _loaded(value: str | bytes) -> str:
    """A stored path back as the file system's str (surrogate escapes for non-UTF-8 bytes)."""
    return os.fsdecode(value) if isinstance(value, bytes) else value
