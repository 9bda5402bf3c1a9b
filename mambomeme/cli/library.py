"""CLI: `mambomeme add DIR...`, `remove DIR...`, `status` -- the user's own library.

Progress bars and notes go to stderr; what the command did goes to stdout (or JSON with
--json), so `add` can be scripted. Exit 0, or 2 on an error (cli.main).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from mambomeme.errors import LibraryError
from mambomeme.library.home import Library, LibraryConfig, folder_key, load_config, save_config


def add_home_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--home",
        type=Path,
        help="library folder (default $MAMBOMEME_HOME, else $XDG_DATA_HOME/mambomeme, "
        "else ~/.local/share/mambomeme)",
    )


def register(sub: Any) -> None:
    a = sub.add_parser("add", help="index folders of your own meme images (incremental)")
    a.add_argument("dirs", nargs="*", type=Path, metavar="DIR", help="folders (none: rescan all)")
    a.add_argument(
        "--ocr",
        choices=("auto", "rapidocr", "tesseract", "none"),
        default="auto",
        help="OCR engine for captions (default auto: rapidocr if installed, else tesseract)",
    )
    a.add_argument("--json", action="store_true", help="print what was done as JSON")
    a.add_argument("--quiet", action="store_true", help="no progress bars")
    add_home_argument(a)
    a.set_defaults(handler=run_add)

    r = sub.add_parser("remove", help="drop folders from your library")
    r.add_argument("dirs", nargs="+", type=Path, metavar="DIR")
    r.add_argument("--json", action="store_true")
    add_home_argument(r)
    r.set_defaults(handler=run_remove)

    s = sub.add_parser("status", help="what your library holds")
    s.add_argument("--json", action="store_true")
    add_home_argument(s)
    s.set_defaults(handler=run_status)


def _note(line: str) -> None:
    print(f"mambomeme: {line}", file=sys.stderr, flush=True)


def run_add(args: argparse.Namespace) -> int:
    from mambomeme.library.build import rebuild
    from mambomeme.library.ocr import open_engine
    from mambomeme.library.scan import scan_folders
    from mambomeme.library.state import StateStore

    library = Library.at(args.home)
    config = load_config(library)
    folders = list(config.folders)
    for folder in args.dirs:
        if not folder.is_dir():
            raise LibraryError(f"{folder}: not a folder")
        if folder_key(folder) not in folders:
            folders.append(folder_key(folder))
    if not folders:
        raise LibraryError(f"the library at {library.home} has no folders: mambomeme add DIR")
    engine = open_engine(args.ocr)
    if engine is None:
        _note(
            "OCR off (--ocr none): indexing file names and sidecars only"
            if args.ocr == "none"
            else "no OCR engine (pip install rapidocr-onnxruntime, or apt-get install "
            "tesseract-ocr): indexing file names and sidecars only"
        )
    save_config(library, LibraryConfig(tuple(folders)))  # a killed run still knows its folders
    with StateStore(library.state_file) as store:
        report = scan_folders(store, folders, engine, progress=not args.quiet)
    built = rebuild(library, note=_note)
    skipped = {**report.skipped, **dict(built.rejects)}
    data: dict[str, Any] = {
        "home": str(library.home),
        "folders": folders,
        "counts": {**report.counts(), "skipped": len(skipped)},
        "ocr": {
            "engine": engine.name if engine else "none",
            "read": report.ocr_read,
            "failed": report.ocr_failed,
        },
        "added": report.added,
        "updated": report.updated,
        "removed": report.removed,
        "skipped": skipped,
        "build": _build_json(built),
    }
    if args.json:
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return 0
    counts = data["counts"]
    print(f"library {library.home} ({len(folders)} folder{'s' * (len(folders) != 1)})")
    print(", ".join(f"{name} {counts[name]}" for name in counts))
    for label, paths in (("added", report.added), ("updated", report.updated),
                         ("removed", report.removed)):  # fmt: skip
        for path in paths[:10]:
            print(f"  {label} {path}")
        if len(paths) > 10:
            print(f"  ... {len(paths) - 10} more {label}")
    for path, reason in sorted(skipped.items()):
        print(f"  skipped {path}: {reason}")
    if engine is not None:
        failed = f", {len(report.ocr_failed)} failed" if report.ocr_failed else ""
        print(f"OCR ({engine.name}): {report.ocr_read} image(s) read{failed}")
    _print_build(built)
    return 0


def _build_json(built: Any) -> dict[str, Any]:
    return {
        "rebuilt": built.rebuilt,
        "items": built.items,
        "eligible": built.eligible,
        "unsafe": built.unsafe,
        "notes": list(built.notes),
        "seconds": round(built.seconds, 2),
    }


def _print_build(built: Any) -> None:
    for line in built.notes:
        print(line)
    what = "built" if built.rebuilt else "unchanged"
    print(
        f"index {what}: {built.items} item(s), {built.eligible} searchable, {built.unsafe} "
        f"masked unsafe ({built.seconds:.1f} s)"
    )


def run_remove(args: argparse.Namespace) -> int:
    from mambomeme.library.build import rebuild
    from mambomeme.library.state import StateStore

    library = Library.at(args.home)
    config = load_config(library)
    folders = list(config.folders)
    dropped: dict[str, int] = {}
    for folder in args.dirs:
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
    built = rebuild(library, note=_note)
    if args.json:
        print(json.dumps({"removed": dropped, "build": _build_json(built)}, indent=2))
        return 0
    for key, count in dropped.items():
        print(f"removed {key} ({count} file(s))")
    _print_build(built)
    return 0


def run_status(args: argparse.Namespace) -> int:
    from mambomeme.library.build import read_record, safety_model_dir
    from mambomeme.library.ocr import available
    from mambomeme.library.state import StateStore

    library = Library.at(args.home)
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
    data: dict[str, Any] = {
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
    if args.json:
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return 0
    print(f"library {library.home}")
    if not config.folders:
        print("no folders yet: mambomeme add DIR")
    for folder, files in data["folders"].items():
        print(f"  {folder}: {files} file(s)")
    if counts:
        print(
            f"files {counts['files']} ({counts['skipped']} skipped), images {counts['images']} "
            f"({counts['without_ocr']} without OCR text)"
        )
    build = data["build"]
    if build["path"]:
        c = build["counts"]
        fresh = "up to date" if build["up_to_date"] else "out of date: run `mambomeme add`"
        print(
            f"index {build['path']}: {c.get('accepted', 0)} item(s), {c.get('eligible', 0)} "
            f"searchable, built {build['built_at']} ({fresh})"
        )
        for line in build["notes"]:
            print(f"  {line}")
    else:
        print("no index yet")
    print(f"OCR engines: {', '.join(engines) or 'none (file names and sidecars only)'}")
    return 0
