"""Publish a build as an immutable, versioned release; roll back to an earlier one.

    releases/
      CURRENT                 the current release id (see pointer.py)
      history.jsonl           append-only: one line per publish or rollback, written before the
                              pointer switch ({"action", "id", "previous", "time"})
      <id>/                   build files + corpus-manifest.json + selection.json + release.json

Publishing copies every file into a hidden staging folder (fsync each), writes the release
manifest last, renames the staging folder to releases/<id>/, makes it read-only, verifies it
from disk, appends to the history and only then switches CURRENT. A publisher killed at any
point leaves CURRENT on the old release or the new, complete one; leftovers of a killed run
(staging folders, pointer temp files) are removed by the next publish or rollback.
id = "<corpus>-<UTC yyyymmddTHHMMSS>-<first 12 hex of the release content sha256>".
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mambomeme.errors import (
    ArtifactIntegrityError,
    IndexError_,
    ReleaseError,
    ReleaseIntegrityError,
)
from mambomeme.index.integrity import CORPUS_MANIFEST, verify_artifacts
from mambomeme.index.query_encoder import check_query_encoder
from mambomeme.index.term_lists import TERM_LISTS_DIR, verify_term_lists
from mambomeme.release.pointer import (
    POINTER_NAME,
    Release,
    check_release_id,
    fsync_dir,
    open_release,
    read_pointer,
    write_pointer,
)
from mambomeme.release.verify import (
    MANIFEST_NAME,
    RELEASE_FORMAT_VERSION,
    combine_digests,
    tree_files,
)

HISTORY_NAME = "history.jsonl"
LOCK_NAME = ".lock"
STAGING_PREFIX = ".staging-"
CORPUS_MANIFEST_NAME = CORPUS_MANIFEST
# a folder publish made: <corpus>-<UTC yyyymmddTHHMMSS>-<12 hex>
PUBLISHED_DIR = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*-[0-9]{8}T[0-9]{6}-[0-9a-f]{12}$")
SELECTION_NAME = "selection.json"
REQUIRED_BUILD_FILES = ("items.parquet", "lexical.sqlite")
DENSE_FILES = ("dense.npy", "dense.ids.json", "dense.json")
DENSE_FOLDERS = ("", "dense/")  # the dense index sits in the build folder or in build/dense/


@contextmanager
def release_lock(releases_dir: Path) -> Iterator[None]:
    """One writer at a time (flock on releases/.lock; the kernel drops it if the writer dies).

    Holding the lock, remove what a killed writer left: staging folders, pointer temps, and
    orphan releases (renamed into place, killed before their history line: never served).
    """
    releases_dir.mkdir(parents=True, exist_ok=True)
    with open(releases_dir / LOCK_NAME, "a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            for leftover in releases_dir.iterdir():
                if leftover.name.startswith(STAGING_PREFIX) and leftover.is_dir():
                    _remove_tree(leftover)
                elif leftover.name.startswith(f".{POINTER_NAME}.") and leftover.name.endswith(
                    ".tmp"
                ):
                    leftover.unlink()
            for orphan in orphan_releases(releases_dir):
                _remove_tree(orphan)
            yield
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def orphan_releases(releases_dir: Path) -> list[Path]:
    """Release folders that no history line names and CURRENT does not point at: a publisher
    killed between its rename and its history line left them. Only call under the lock."""
    known = {entry["id"] for entry in read_history(releases_dir)}
    try:
        known.add(read_pointer(releases_dir) or "")
    except ReleaseError:
        pass  # a garbage pointer is reported by whoever reads it
    return sorted(
        p
        for p in releases_dir.iterdir()
        if p.is_dir() and not p.is_symlink() and PUBLISHED_DIR.match(p.name) and p.name not in known
    )


def _remove_tree(root: Path) -> None:
    """rmtree a folder that publish made read-only (its folders need write permission back)."""
    for dirpath, _, _ in os.walk(root):
        os.chmod(dirpath, stat.S_IRWXU)
    shutil.rmtree(root)


def read_history(releases_dir: Path) -> list[dict[str, Any]]:
    """Every history entry in order; a malformed line is an error naming file:line."""
    path = releases_dir / HISTORY_NAME
    if not path.exists():
        return []
    entries: list[dict[str, Any]] = []
    text = path.read_text(encoding="utf-8")
    if text and not text.endswith("\n"):
        raise ReleaseError(f"{path}: last line is incomplete (no newline)")
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            entry = json.loads(line)
        except ValueError as exc:
            raise ReleaseError(f"{path}:{number}: not JSON: {exc}") from None
        if not isinstance(entry, dict) or entry.get("action") not in ("publish", "rollback"):
            raise ReleaseError(f"{path}:{number}: field 'action' must be publish or rollback")
        if not isinstance(entry.get("id"), str):
            raise ReleaseError(f"{path}:{number}: field 'id' must be a string")
        entries.append(entry)
    return entries


def append_history(releases_dir: Path, action: str, release_id: str, previous: str | None) -> None:
    """Append one line with a single write, then fsync (the file is never rewritten)."""
    path = releases_dir / HISTORY_NAME
    read_history(releases_dir)  # refuse to append after a malformed history
    entry = {"action": action, "id": release_id, "previous": previous, "time": _utc_iso()}
    line = (json.dumps(entry, sort_keys=True) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


def publish(
    build_dir: Path,
    corpus_manifest: Path,
    selection: Path,
    releases_dir: Path,
    *,
    now: datetime | None = None,
) -> Release:
    """Copy a build, its corpus manifest and the frozen selection into a new release; switch.

    Returns the new current release. Refuses a build without items.parquet and lexical.sqlite,
    a partial dense index, a query-encoder folder that does not verify against its manifest or
    whose weights are not the dense index's, term lists not built from its lexical.sqlite (or
    whose files do not match their sha256), a build file that would shadow a release file, and
    an existing id. Everything under the build folder (query-encoder/ included) is copied, and
    the staged copy is checked artifact by artifact against the manifests it carries
    (index/integrity.py `verify_artifacts`) before its release manifest is written: a corrupt
    or truncated file is never published (ReleaseIntegrityError naming it).
    """
    sources = _release_sources(build_dir, corpus_manifest, selection)
    corpus = check_release_id(build_dir.resolve().name, f"{build_dir}: corpus name")
    with release_lock(releases_dir):
        staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=releases_dir))
        files: dict[str, dict[str, Any]] = {}
        for rel, source in sources.items():
            files[rel] = _copy_hashed(source, staging / rel)
        try:
            integrity = verify_artifacts(staging, staging / CORPUS_MANIFEST_NAME)
        except ArtifactIntegrityError as exc:
            _remove_tree(staging)
            message = str(exc).replace(str(staging / CORPUS_MANIFEST_NAME), str(corpus_manifest))
            message = message.replace(str(staging), str(build_dir))
            raise ReleaseIntegrityError(f"--build {build_dir}: {message}; not published") from None
        content_sha = combine_digests((rel, files[rel]["sha256"]) for rel in sorted(files))
        stamp = (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y%m%dT%H%M%S")
        release_id = f"{corpus}-{stamp}-{content_sha[:12]}"
        final = releases_dir / release_id
        if final.exists():
            shutil.rmtree(staging)
            raise ReleaseError(f"{final}: release already exists (same content, same second)")
        manifest = {
            "format": RELEASE_FORMAT_VERSION,
            "id": release_id,
            "corpus": corpus,
            "created_utc": stamp,
            "content_sha256": content_sha,
            "files": files,
            "integrity": integrity,
            "sources": {
                "build": str(build_dir),
                "corpus_manifest": str(corpus_manifest),
                "selection": str(selection),
            },
        }
        _write_synced(staging / MANIFEST_NAME, _json_bytes(manifest))
        for folder in sorted({(staging / rel).parent for rel in files} | {staging}):
            fsync_dir(folder)
        os.rename(staging, final)
        fsync_dir(releases_dir)
        _make_read_only(final)
        released = open_release(releases_dir, release_id, use_cache=False)
        previous = read_pointer(releases_dir)
        append_history(releases_dir, "publish", release_id, previous)
        write_pointer(releases_dir, release_id)
    return released


def rollback(releases_dir: Path, to: str | None = None) -> Release:
    """Switch CURRENT to release `to`, or by default to the release published just before the
    current one (publication order from history.jsonl). The target is fully re-verified first.
    """
    with release_lock(releases_dir):
        current = read_pointer(releases_dir)
        if current is None:
            raise ReleaseError(f"{releases_dir}: nothing published, nothing to roll back")
        if to is None:
            order = [e["id"] for e in read_history(releases_dir) if e["action"] == "publish"]
            if current not in order:
                raise ReleaseError(f"{releases_dir}: current release {current} is not in history")
            index = order.index(current)
            if index == 0:
                raise ReleaseError(
                    f"{releases_dir}: {current} is the first release; none before it"
                )
            to = order[index - 1]
        target = open_release(releases_dir, to, use_cache=False, deep=True)
        append_history(releases_dir, "rollback", target.id, current)
        write_pointer(releases_dir, target.id)
    return target


def _release_sources(build_dir: Path, corpus_manifest: Path, selection: Path) -> dict[str, Path]:
    """Map release relpath -> source file, refusing incomplete or clashing inputs."""
    if not build_dir.is_dir():
        raise ReleaseError(f"--build {build_dir}: not a directory")
    for name in REQUIRED_BUILD_FILES:
        if not (build_dir / name).is_file():
            raise ReleaseError(f"--build {build_dir}: required file {name} is missing")
    for folder in DENSE_FOLDERS:
        present = [name for name in DENSE_FILES if (build_dir / folder / name).is_file()]
        if present and len(present) != len(DENSE_FILES):
            missing = sorted(f"{folder}{name}" for name in set(DENSE_FILES) - set(present))
            raise ReleaseError(f"--build {build_dir}: partial dense index, missing {missing}")
    try:  # the ONNX query encoder travels with the build; a broken one is not published
        check_query_encoder(build_dir)
    except IndexError_ as exc:
        raise ReleaseError(f"--build {build_dir}: {exc}") from None
    lists = build_dir / TERM_LISTS_DIR
    if lists.is_dir():  # the term lists travel too, and must be this lexical.sqlite's
        try:
            verify_term_lists(lists, build_dir / "lexical.sqlite")
        except (IndexError_, OSError, ValueError) as exc:
            raise ReleaseError(f"--build {build_dir}: {TERM_LISTS_DIR}: {exc}") from None
    for label, path in (("corpus manifest", corpus_manifest), ("selection", selection)):
        if not path.is_file():
            raise ReleaseError(f"{label} {path}: file not found")
    try:
        selection_data = json.loads(selection.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise ReleaseError(f"selection {selection}: not a readable JSON file: {exc}") from None
    if not isinstance(selection_data, dict) or "config" not in selection_data:
        raise ReleaseError(f"selection {selection}: field 'config' missing (not a selection.json)")
    sources = {rel: build_dir / rel for rel in tree_files(build_dir)}
    for name in (MANIFEST_NAME, CORPUS_MANIFEST_NAME, SELECTION_NAME):
        if name in sources:
            raise ReleaseError(f"--build {build_dir}: file {name} clashes with a release file")
    sources[CORPUS_MANIFEST_NAME] = corpus_manifest
    sources[SELECTION_NAME] = selection
    return sources


def _copy_hashed(source: Path, target: Path) -> dict[str, Any]:
    """Copy one file, hashing the bytes as they are written; fsync; return {sha256, bytes}."""
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    size = 0
    with open(source, "rb") as src, open(target, "wb") as dst:
        while block := src.read(1 << 20):
            digest.update(block)
            dst.write(block)
            size += len(block)
        dst.flush()
        os.fsync(dst.fileno())
    return {"sha256": digest.hexdigest(), "bytes": size}


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _json_bytes(data: Any) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode("utf-8")


def _make_read_only(root: Path) -> None:
    """Files 0444, folders 0555, deepest first (a guard against accidents, not a security line)."""
    read_only = stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH
    for dirpath, dirnames, filenames in os.walk(root, topdown=False):
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), read_only)
        for name in dirnames:
            os.chmod(
                os.path.join(dirpath, name), read_only | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH
            )
    os.chmod(root, read_only | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _utc_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
