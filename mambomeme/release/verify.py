"""Checksums of folders and release verification.

A release folder holds its files plus `release.json`, the release manifest, which lists the
sha256 and size of every other file. A release verifies when the set of files on disk equals
the set in the manifest and every sha256 matches: a missing, extra or changed file refuses it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mambomeme.corpus.manifest import sha256_file
from mambomeme.errors import ArtifactIntegrityError, ReleaseIntegrityError
from mambomeme.index.integrity import (
    CORPUS_MANIFEST,
    RELEASE_MANIFEST,
    changed_files,
    verify_artifacts,
)

MANIFEST_NAME = RELEASE_MANIFEST
RELEASE_FORMAT_VERSION = "release-v1"


def tree_files(root: Path, exclude: Iterable[str] = ()) -> list[str]:
    """Relative POSIX paths of every regular file under `root`, sorted; `exclude` are relpaths."""
    skip = set(exclude)
    found: list[str] = []
    for path in root.rglob("*"):
        if path.is_symlink():
            raise ReleaseIntegrityError(f"{path}: symbolic links are not allowed in a release")
        if path.is_file():
            rel = path.relative_to(root).as_posix()
            if rel not in skip:
                found.append(rel)
    return sorted(found)


def combine_digests(entries: Iterable[tuple[str, str]]) -> str:
    """One sha256 over (relpath, file sha256) pairs in the given (sorted) order.

    digest = sha256( concat( relpath + "\\0" + file_sha256_hex + "\\n" ) )
    The names are part of the digest so renaming a file changes it.
    """
    digest = hashlib.sha256()
    for rel, file_sha in entries:
        digest.update(rel.encode("utf-8") + b"\0" + file_sha.encode("ascii") + b"\n")
    return digest.hexdigest()


def folder_checksum(root: Path) -> str:
    """sha256 over every file of `root` in sorted relpath order (see `combine_digests`)."""
    if not root.is_dir():
        raise ReleaseIntegrityError(f"{root}: not a directory")
    return combine_digests((rel, sha256_file(root / rel)) for rel in tree_files(root))


def load_manifest(release_dir: Path) -> dict[str, Any]:
    """The release manifest as a dict; a missing or malformed manifest refuses the release."""
    path = release_dir / MANIFEST_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReleaseIntegrityError(f"{path}: release manifest missing") from None
    except (OSError, ValueError) as exc:
        raise ReleaseIntegrityError(f"{path}: unreadable release manifest: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
        raise ReleaseIntegrityError(f"{path}: field 'files' must be an object")
    if data.get("format") != RELEASE_FORMAT_VERSION:
        raise ReleaseIntegrityError(
            f"{path}: field 'format' is {data.get('format')!r}, expected {RELEASE_FORMAT_VERSION!r}"
        )
    return data


def verify_release(release_dir: Path, deep: bool = False) -> dict[str, Any]:
    """Check every file of a release against its manifest; return the manifest.

    Raises ReleaseIntegrityError naming each missing, unexpected or changed file, and when the
    manifest's id is not the folder's name or its content digest does not match its files.
    `deep` also checks every artifact against the manifests the release carries
    (index/integrity.py `verify_artifacts`: per-item content hashes, SQLite and FTS5 integrity,
    dense shapes and sha256s) and against the integrity record publish wrote.
    """
    manifest = load_manifest(release_dir)
    if manifest.get("id") != release_dir.name:
        raise ReleaseIntegrityError(
            f"{release_dir}: manifest id {manifest.get('id')!r} is not the folder name"
        )
    expected: dict[str, Any] = manifest["files"]
    tree_files(release_dir)  # refuses symbolic links
    problems = changed_files(release_dir, expected, exclude=[MANIFEST_NAME])
    if problems:
        raise ReleaseIntegrityError(f"{release_dir}: " + "; ".join(problems))
    digest = combine_digests((rel, expected[rel]["sha256"]) for rel in sorted(expected))
    if digest != manifest.get("content_sha256"):
        raise ReleaseIntegrityError(f"{release_dir}: content_sha256 does not match its file list")
    if deep:
        try:
            record = verify_artifacts(release_dir, release_dir / CORPUS_MANIFEST)
        except ArtifactIntegrityError as exc:
            raise ReleaseIntegrityError(f"{release_dir}: {exc}") from None
        recorded = manifest.get("integrity")
        if recorded is not None and recorded != record:
            raise ReleaseIntegrityError(
                f"{release_dir}: its artifacts do not match the integrity record of "
                f"{MANIFEST_NAME} ({recorded} != {record})"
            )
    return manifest
