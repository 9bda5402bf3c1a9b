"""Remembered verification: a folder's full content check runs once per change of its files.

Hashing every artifact at every open would cost a `mambomeme search` process 0.1-1 s (the dense
matrix alone is 581 MB on memes-full); checking only sizes and headers lets a bit flipped inside
lexical.sqlite or a term list through. So the full check (`integrity.check_content`) runs on the
first open of a folder, and its success is remembered as the identity of every file under the
folder: (size, mtime, ctime, inode), the same idea as git's index. Any write to a file changes
its ctime (which, unlike the mtime, a user cannot set back), so the next open sees the change
and checks the folder again; a failed check is never remembered.

Records live outside the folder (a build folder is a DVC output and a release is read-only):
$MAMBOMEME_VERIFIED_DIR, else $XDG_CACHE_HOME/mambomeme/verified, else
~/.cache/mambomeme/verified, one small JSON file per folder. Where that cannot be written the
check simply runs at every open. `mambomeme release verify` and publish always check in full.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

RECORD_VERSION = "verified-v1"
Identity = dict[str, list[int]]  # relative path -> [size, mtime_ns, ctime_ns, inode]


def records_dir() -> Path:
    explicit = os.environ.get("MAMBOMEME_VERIFIED_DIR")
    if explicit:
        return Path(explicit)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "mambomeme" / "verified"


def identity(folder: Path) -> Identity:
    """Every regular file under `folder` (sorted relative paths) with its stat identity."""
    found: Identity = {}
    for path in sorted(Path(folder).rglob("*")):
        if path.is_file():
            st = path.stat()
            found[path.relative_to(folder).as_posix()] = [
                st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino,
            ]  # fmt: skip
    return found


def record_path(folder: Path, check: str) -> Path:
    key = hashlib.sha256(f"{Path(folder).resolve()}\0{check}".encode()).hexdigest()[:32]
    return records_dir() / f"{key}.json"


def _read(path: Path) -> Identity | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # absent, unreadable or torn: check again
    if not isinstance(data, dict) or data.get("format") != RECORD_VERSION:
        return None
    files = data.get("files")
    return files if isinstance(files, dict) else None


def _write(path: Path, folder: Path, check: str, files: Identity) -> None:
    record = {"format": RECORD_VERSION, "folder": str(Path(folder).resolve()), "check": check,
              "files": files}  # fmt: skip
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(record, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)  # no record: the next open checks again


def is_verified(folder: Path, check: str) -> bool:
    """The folder's files are exactly those a successful `check` last saw."""
    return _read(record_path(folder, check)) == identity(folder)


def file_unchanged(folder: Path, check: str, path: Path) -> bool:
    """One file of the folder is unchanged since a successful `check` (a cheap stat), so a
    loader may skip re-hashing it."""
    files = _read(record_path(folder, check))
    if files is None:
        return False
    for inner, outer in (
        (Path(path).resolve(), Path(folder).resolve()),
        (Path(os.path.abspath(path)), Path(os.path.abspath(folder))),
    ):
        try:
            rel = inner.relative_to(outer).as_posix()
        except ValueError:
            continue  # a file reached through a link out of the folder: try it as named
        return rel in files and files[rel] == identity_of(path)
    return False  # not a file of the folder's identity: the loader hashes it


def identity_of(path: Path) -> list[int]:
    st = Path(path).stat()
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def ensure_verified(folder: Path, check: str, run: Callable[[], object]) -> bool:
    """Run `run` (which raises on a corrupt folder) unless the folder is unchanged since it last
    passed; remember a pass. True when the check ran."""
    before = identity(folder)
    path = record_path(folder, check)
    if _read(path) == before:
        return False
    run()
    if identity(folder) == before:  # nothing changed while it ran
        _write(path, folder, check, before)
    return True
