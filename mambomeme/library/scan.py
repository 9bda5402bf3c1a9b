"""Scanning the added folders into the state store: only new or changed files are read.

For each image under a folder (png, jpg, jpeg, gif, webp, recursively; the folder source's
rules, corpus/sources/folder.py): a file whose size, mtime and metadata sources are as the
state recorded is unchanged and not opened. Any other is hashed (sha256 of its bytes); an image
whose bytes the state already knows reuses its perceptual hash and OCR text (a rename, a copy,
a touch); a new image is fingerprinted and OCRed, then committed before the next file starts
(with the ray executor the OCR reads are made by Ray actors beforehand, library/ocr_map.py).
Files gone from disk are dropped. `ScanReport` says what happened to every file.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import UnidentifiedImageError
from tqdm import tqdm

from mambomeme.corpus.sources import folder as folder_source
from mambomeme.errors import OcrError
from mambomeme.index.ray_map import IN_PROCESS, ExecutorConfig
from mambomeme.library.ocr import OcrEngine
from mambomeme.library.ocr_map import ReadAhead, read_on_ray
from mambomeme.library.state import FileRow, ImageRow, StateStore

ENV_SLOW = "MAMBOMEME_LIBRARY_SLOW_S"  # tests only: seconds to sleep after each file scanned


@dataclass
class ScanReport:
    """Paths by what happened to them in this run (skipped: path -> reason)."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    ocr_read: int = 0  # images OCRed in this run
    ocr_failed: dict[str, str] = field(default_factory=dict)  # indexed without OCR text

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed)

    def counts(self) -> dict[str, int]:
        return {
            "added": len(self.added),
            "updated": len(self.updated),
            "unchanged": len(self.unchanged),
            "removed": len(self.removed),
            "skipped": len(self.skipped),
        }


def sidecar_signature(path: Path, root: Path) -> str:
    """Names, sizes and mtimes of the image's possible metadata sources (its sidecars and the
    folder's metadata.csv): a change to any of them re-reads the image's metadata."""
    names = {path.name + s for s in folder_source.SIDECAR_SUFFIXES}
    names |= {path.stem + s for s in folder_source.SIDECAR_SUFFIXES}
    parts = []
    for candidate in sorted([path.parent / n for n in names] + [root / "metadata.csv"]):
        try:
            stat = candidate.stat()
        except OSError:
            continue
        parts.append(f"{candidate.name}:{stat.st_size}:{stat.st_mtime_ns}")
    return "|".join(parts)


def scan_folders(
    store: StateStore,
    folders: Sequence[str],
    ocr: OcrEngine | None,
    progress: bool = True,
    on_file: Callable[[str], None] | None = None,
    executor: ExecutorConfig = IN_PROCESS,
) -> ScanReport:
    """Bring the store up to date with `folders` (absolute paths); rows of folders not listed
    are dropped (a removed folder). Returns what happened to each file. With the ray executor
    the OCR reads run on Ray first (library/ocr_map.py); the store is written here either way,
    file by file in the same order."""
    report = ScanReport()
    known = store.files()
    for gone in sorted(p for p, row in known.items() if row.folder not in folders):
        report.removed.append(gone)
    store.drop_files(report.removed)
    work: list[tuple[str, Path]] = []
    for folder in folders:
        root = Path(folder)
        if not root.is_dir():
            report.skipped[folder] = "folder not found (run `mambomeme remove` to drop it)"
            continue
        work += [(folder, p) for p in folder_source.find_images(root)]
    if ocr is not None and executor.kind == "ray":
        candidates = _may_need_ocr(store, work, known, ocr)
        ocr = ReadAhead(ocr, read_on_ray(candidates, ocr.name, executor))
    seen: set[str] = set()
    tables: dict[str, tuple[dict[str, dict[str, Any]], str | None]] = {}
    delay = float(os.environ.get(ENV_SLOW, "0") or 0)
    for folder, path in tqdm(work, desc="files", unit="file", disable=not progress):
        key = str(path.absolute())
        seen.add(key)
        if folder not in tables:
            tables[folder] = folder_source.read_metadata_csv(Path(folder))
        outcome = _scan_one(store, folder, path, known.get(key), tables[folder], ocr, report)
        if outcome != "skipped":
            getattr(report, outcome).append(key)
        if on_file is not None:
            on_file(key)
        if delay and outcome in ("added", "updated"):
            time.sleep(delay)
    # a folder that is not there (an unmounted drive) keeps its rows until it is removed
    missing = [
        p for p, row in known.items()
        if row.folder in folders and p not in seen and Path(row.folder).is_dir()
    ]  # fmt: skip
    store.drop_files(sorted(missing))
    report.removed += sorted(missing)
    for path, row in store.files().items():
        if row.error is not None and path in seen:
            report.skipped[path] = row.error
    store.prune_images()
    return report


def _scan_one(
    store: StateStore,
    folder: str,
    path: Path,
    old: FileRow | None,
    table: tuple[dict[str, dict[str, Any]], str | None],
    ocr: OcrEngine | None,
    report: ScanReport,
) -> str:
    """Scan one file into the store; returns added | updated | unchanged | skipped."""
    key = str(path.absolute())
    root = Path(folder)
    try:
        stat = path.stat()
    except OSError as exc:
        return _skip(store, key, folder, 0, 0, "", f"unreadable file: {exc.strerror}")
    sidecar = sidecar_signature(path, root)
    same_stat = old is not None and (old.size, old.mtime_ns, old.sidecar) == (
        stat.st_size,
        stat.st_mtime_ns,
        sidecar,
    )
    if same_stat and old is not None and (old.error is not None or _complete(store, old, ocr)):
        return "skipped" if old.error is not None else "unchanged"
    try:
        data = path.read_bytes()
    except OSError as exc:
        reason = f"unreadable file: {exc.strerror}"
        return _skip(store, key, folder, stat.st_size, stat.st_mtime_ns, sidecar, reason)
    relative = path.relative_to(root).as_posix()
    rows, table_error = table
    if table_error is not None:
        reason = f"metadata.csv: {table_error}"
        return _skip(store, key, folder, stat.st_size, stat.st_mtime_ns, sidecar, reason)
    metadata = folder_source._metadata_for(path, relative, rows)
    if isinstance(metadata, str):
        return _skip(store, key, folder, stat.st_size, stat.st_mtime_ns, sidecar, metadata)
    sha = hashlib.sha256(data).hexdigest()
    image = store.image(sha)
    wants_text = not isinstance(metadata.get("ocr_text"), str)
    reread = image is None or (wants_text and ocr is not None and image.ocr_text is None)
    if reread:
        try:
            phash = image.phash if image else folder_source.perceptual_hash(path)
        except (OSError, UnidentifiedImageError, ValueError, SyntaxError) as exc:
            reason = f"unreadable image: {type(exc).__name__}: {exc}"
            return _skip(store, key, folder, stat.st_size, stat.st_mtime_ns, sidecar, reason)
        text, engine = None, "none"
        if wants_text and ocr is not None:
            try:
                text, engine = ocr.read(path), ocr.name
                report.ocr_read += 1
            except OcrError as exc:
                engine = f"failed: {exc}"
                report.ocr_failed[key] = str(exc)
        store.put_image(ImageRow(sha, phash, text, engine))
    row = FileRow(key, folder, stat.st_size, stat.st_mtime_ns, sidecar, sha, metadata, None)
    store.put_file(row)
    if old is None or old.error is not None:
        return "added"
    same = old.sha256 == sha and old.metadata == row.metadata and not reread
    return "unchanged" if same else "updated"


def _may_need_ocr(
    store: StateStore,
    work: Sequence[tuple[str, Path]],
    known: Mapping[str, FileRow],
    ocr: OcrEngine,
) -> list[str]:
    """Absolute paths `_scan_one` may OCR, in scan order: files not unchanged-and-complete
    whose bytes the state holds no OCR text for (a superset: metadata and image checks come
    later)."""
    out = []
    for folder, path in work:
        old = known.get(str(path.absolute()))
        try:
            stat = path.stat()
            same = old is not None and (old.size, old.mtime_ns, old.sidecar) == (
                stat.st_size,
                stat.st_mtime_ns,
                sidecar_signature(path, Path(folder)),
            )
            if same and old is not None and (old.error is not None or _complete(store, old, ocr)):
                continue
            image = store.image(hashlib.sha256(path.read_bytes()).hexdigest())
        except OSError:
            continue  # the scan skips it as unreadable
        if image is None or image.ocr_text is None:
            out.append(str(path.absolute()))
    return out


def _complete(store: StateStore, old: FileRow, ocr: OcrEngine | None) -> bool:
    """An unchanged file needs no work unless it was indexed without OCR and an engine is
    now available (then it is read once more)."""
    if ocr is None or old.sha256 is None or isinstance(old.metadata.get("ocr_text"), str):
        return True
    image = store.image(old.sha256)
    return image is not None and image.ocr_text is not None


def _skip(
    store: StateStore,
    key: str,
    folder: str,
    size: int,
    mtime_ns: int,
    sidecar: str,
    reason: str,
) -> str:
    store.put_file(FileRow(key, folder, size, mtime_ns, sidecar, None, {}, reason))
    return "skipped"
