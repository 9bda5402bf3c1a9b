"""The user's library as a whole: add folders (scan them and rebuild the index), remove folders,
the owner's safety overrides and the masked files, and what the library holds. `mambomeme add`,
`remove`, `status` and `library` (cli/library.py) print these results; `note` receives the
progress lines (the CLI writes them to stderr)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mambomeme.corpus.preview_paths import external_path
from mambomeme.errors import LibraryError
from mambomeme.index.ray_map import ExecutorConfig, ray_session
from mambomeme.library.build import BuildResult, Note, read_record, rebuild, safety_model_dir
from mambomeme.library.defaults import LOCK_WAIT_S, library_params
from mambomeme.library.home import Library, LibraryConfig, folder_key, load_config, save_config
from mambomeme.library.lock import writer_lock
from mambomeme.library.ocr import OcrEngine, available, open_engine
from mambomeme.library.scan import ScanReport, scan_folders
from mambomeme.library.state import StateStore


@dataclass(frozen=True)
class Added:
    """What add_folders did: the library's folders now, the OCR engine used (None: no OCR), the
    scan of every folder and the rebuild."""

    library: Library
    folders: list[str]
    ocr: OcrEngine | None
    scan: ScanReport
    built: BuildResult

    @property
    def skipped(self) -> dict[str, str]:
        """path -> reason: files the scan skipped and items the build rejected."""
        return {**self.scan.skipped, **dict(self.built.rejects)}


def add_folders(
    home: Path | None,
    dirs: Sequence[Path],
    ocr: str,
    progress: bool,
    note: Note,
    wait_s: float = LOCK_WAIT_S,
    executor: ExecutorConfig | None = None,
) -> Added:
    """Add `dirs` to the library at `home` (none: rescan its folders), scan them with the OCR
    engine `ocr` (auto, rapidocr, tesseract or none) and rebuild the index, holding the
    writer lock (LibraryBusyError after `wait_s` seconds of another writer). `executor` runs
    the map steps (OCR, safety scoring, embedding) in-process or on Ray; None: the library's
    default (defaults.py `build`, in-process)."""
    library = Library.at(home)
    chosen = executor or ExecutorConfig.from_params(library_params()["build"])
    with writer_lock(library, wait_s):
        return _add(library, dirs, ocr, progress, note, chosen)


def _add(
    library: Library,
    dirs: Sequence[Path],
    ocr: str,
    progress: bool,
    note: Note,
    executor: ExecutorConfig,
) -> Added:
    folders = list(load_config(library).folders)
    for folder in dirs:
        if not folder.is_dir():
            raise LibraryError(f"{folder}: not a folder")
        if folder_key(folder) not in folders:
            folders.append(folder_key(folder))
    if not folders:
        raise LibraryError(f"the library at {library.home} has no folders: mambomeme add DIR")
    engine = open_engine(ocr)
    if engine is None:
        note(
            "OCR off (--ocr none): indexing file names and sidecars only"
            if ocr == "none"
            else "no OCR engine (pip install rapidocr-onnxruntime, or apt-get install "
            "tesseract-ocr): indexing file names and sidecars only"
        )
    save_config(library, LibraryConfig(tuple(folders)))  # a killed run still knows its folders
    with ray_session(executor):  # one Ray (when asked for) for OCR, safety scoring, embedding
        with StateStore(library.state_file) as store:
            report = scan_folders(store, folders, engine, progress=progress, executor=executor)
        built = rebuild(library, note=note, executor=executor)
    return Added(library, folders, engine, report, built)


def remove_folders(
    home: Path | None, dirs: Sequence[Path], note: Note, wait_s: float = LOCK_WAIT_S
) -> tuple[dict[str, int], BuildResult]:
    """Drop `dirs` from the library at `home` and rebuild: (folder -> files dropped, rebuild),
    holding the writer lock."""
    library = Library.at(home)
    with writer_lock(library, wait_s):
        return _remove(library, dirs, note)


def _remove(
    library: Library, dirs: Sequence[Path], note: Note
) -> tuple[dict[str, int], BuildResult]:
    folders = list(load_config(library).folders)
    dropped: dict[str, int] = {}
    for folder in dirs:
        key = folder_key(folder)
        if key not in folders:
            known = ", ".join(folders) or "none"
            raise LibraryError(f"{folder}: not in the library (folders: {known})")
        folders.remove(key)
        dropped[key] = 0
    save_config(library, LibraryConfig(tuple(folders)))
    with StateStore(library.state_file) as store:
        for key in dropped:
            dropped[key] = store.drop_folder(key)
        store.prune_images()
    return dropped, rebuild(library, note=note)


def library_status(home: Path | None) -> dict[str, Any]:
    """What the library at `home` holds (the `status --json` document): files per folder, the
    state store's counts, the index and whether it is up to date, OCR engines, safety model."""
    library = Library.at(home)
    config = load_config(library)
    record = read_record(library) or {}
    per_folder: dict[str, int] = {}
    counts: dict[str, int] = {}
    current = False
    if library.state_file.exists():
        with StateStore(library.state_file) as store:
            counts = store.counts()
            per_folder = {f: len(store.files(f)) for f in config.folders}
            current = record.get("state_digest") == store.digest()
    engines = [name for name, ok in available().items() if ok and name != "none"]
    return {
        "home": str(library.home),
        "folders": per_folder or {f: 0 for f in config.folders},
        "state": counts,
        "build": {
            "path": str(library.build_dir) if library.exists() else None,
            "built_at": record.get("built_at"),
            "counts": record.get("counts", {}),
            "up_to_date": bool(library.exists() and current),
            "notes": record.get("notes", []),
        },
        "ocr_engines": engines,
        "safety_model": str(safety_model_dir() or ""),
    }


def set_override(
    home: Path | None, path: Path, decision: str, note: Note, wait_s: float = LOCK_WAIT_S
) -> tuple[str, BuildResult]:
    """The owner's word on one file (`allow`: searchable whatever the safety mask says,
    `deny`: hidden), kept in the state store, and the rebuild that applies it: (the file's
    path as the library knows it, the rebuild). LibraryError for a file not in the library."""
    library = Library.at(home)
    key = str(Path(path).expanduser().absolute())
    with writer_lock(library, wait_s):
        with StateStore(library.state_file) as store:
            files = store.files()
            if key not in files:
                resolved = str(Path(key).resolve())
                key = resolved if resolved in files else key
            if key not in files:
                raise LibraryError(
                    f"{path}: not a file of the library at {library.home} "
                    "(`mambomeme add DIR` first; `mambomeme library masked` lists masked files)"
                )
            store.put_override(key, decision)
        return key, rebuild(library, note=note)


def masked_files(home: Path | None) -> list[dict[str, str]]:
    """What the safety mask hides in the served build: path (the file system's str), id,
    title, reason (library/masking.py), in path order."""
    library = Library.at(home)
    record = read_record(library)
    if record is None:
        raise LibraryError(f"no library index at {library.home}: mambomeme add DIR")
    entries = record.get("masked", [])
    return [
        {**entry, "path": external_path(str(entry.get("path", ""))) or str(entry.get("path"))}
        for entry in entries
        if isinstance(entry, dict)
    ]
