"""The pointer to the current release: `releases/CURRENT` holds one release id and a newline.

Switching writes a temp file in the same folder, fsyncs it, `os.replace`s it over CURRENT and
fsyncs the folder, so a reader (or a crash) sees the old id or the new id, never a mix. A reader
reads CURRENT once and then only opens files under `releases/<id>/`, which never change, so the
id it reports and the content it reads belong together.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mambomeme.errors import ReleaseError, ReleaseIntegrityError
from mambomeme.index.verified import ensure_verified
from mambomeme.release.verify import MANIFEST_NAME, verify_release

POINTER_NAME = "CURRENT"
RELEASE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class Release:
    """A verified release: its id (tag every result list with it) and its folder."""

    id: str
    path: Path


def check_release_id(release_id: str, where: str) -> str:
    """A release id is one path component of letters, digits, '.', '_' and '-'."""
    if not RELEASE_ID.match(release_id):
        raise ReleaseError(f"{where}: {release_id!r} is not a valid release id")
    return release_id


def fsync_dir(path: Path) -> None:
    """fsync a directory so a rename inside it survives a crash."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_pointer(releases_dir: Path) -> str | None:
    """The id in releases/CURRENT, or None when nothing was ever published."""
    path = releases_dir / POINTER_NAME
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    if not text.endswith("\n") or text.count("\n") != 1:
        raise ReleaseError(f"{path}: expected one release id and a newline, got {text!r}")
    return check_release_id(text[:-1], str(path))


def write_pointer(releases_dir: Path, release_id: str) -> None:
    """Atomically switch releases/CURRENT to `release_id` (temp, fsync, replace, fsync dir)."""
    check_release_id(release_id, "write_pointer")
    fd, tmp = tempfile.mkstemp(prefix=f".{POINTER_NAME}.", suffix=".tmp", dir=releases_dir)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(release_id + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, releases_dir / POINTER_NAME)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(releases_dir)


RELEASE_CHECK = "release-files-v1"  # index/verified.py remembers a pass under this name


def open_release(
    releases_dir: Path, release_id: str, *, use_cache: bool = True, deep: bool = False
) -> Release:
    """Verify releases/<id> against its manifest and return it; refuse it if it does not match.

    A pass is remembered by the identity of every file (index/verified.py: size, mtime, ctime,
    inode), across processes, so a `mambomeme search` does not re-hash an unchanged release;
    pass use_cache=False for a full re-hash, and deep=True (never remembered) to also check
    every artifact's content (verify.verify_release).
    """
    check_release_id(release_id, "open_release")
    path = releases_dir / release_id
    if not (path / MANIFEST_NAME).is_file():
        raise ReleaseIntegrityError(f"{path}: not a release (no {MANIFEST_NAME})")
    if deep or not use_cache:
        verify_release(path, deep=deep)
    else:
        ensure_verified(path, RELEASE_CHECK, lambda: verify_release(path))
    return Release(id=release_id, path=path)


def resolve_current(releases_dir: Path, *, use_cache: bool = True, deep: bool = False) -> Release:
    """The current release, verified; ReleaseError when nothing was published yet."""
    release_id = read_pointer(releases_dir)
    if release_id is None:
        raise ReleaseError(f"{releases_dir / POINTER_NAME}: no current release; run publish")
    return open_release(releases_dir, release_id, use_cache=use_cache, deep=deep)


def current_release(releases_dir: Path) -> Release:
    """What the CLI and TUI serve: the verified current release (id + folder)."""
    return resolve_current(releases_dir)
