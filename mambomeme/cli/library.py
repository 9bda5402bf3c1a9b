"""`mambomeme add DIR...`, `remove DIR...`, `status`: the user's own library (library/folders.py).

Progress bars and notes go to stderr; what the command did goes to stdout (or JSON with
--json), so `add` can be scripted. Exit 0, or 2 on an error (cli.main).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mambomeme.library.build import BuildResult


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
    a.add_argument("--quiet", action="store_true", help="no progress bars (model loading included)")
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
    from mambomeme.library.folders import add_folders

    if args.quiet:
        from mambomeme.cli.quiet import silence_progress_bars

        silence_progress_bars()
    done = add_folders(args.home, args.dirs, args.ocr, not args.quiet, _note)
    report, built, skipped = done.scan, done.built, done.skipped
    data: dict[str, Any] = {
        "home": str(done.library.home),
        "folders": done.folders,
        "counts": {**report.counts(), "skipped": len(skipped)},
        "ocr": {
            "engine": done.ocr.name if done.ocr else "none",
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
    counts, folders = data["counts"], done.folders
    print(f"library {done.library.home} ({len(folders)} folder{'s' * (len(folders) != 1)})")
    print(", ".join(f"{name} {counts[name]}" for name in counts))
    for label, paths in (("added", report.added), ("updated", report.updated),
                         ("removed", report.removed)):  # fmt: skip
        for path in paths[:10]:
            print(f"  {label} {path}")
        if len(paths) > 10:
            print(f"  ... {len(paths) - 10} more {label}")
    for path, reason in sorted(skipped.items()):
        print(f"  skipped {path}: {reason}")
    if done.ocr is not None:
        failed = f", {len(report.ocr_failed)} failed" if report.ocr_failed else ""
        print(f"OCR ({done.ocr.name}): {report.ocr_read} image(s) read{failed}")
    _print_build(built)
    return 0


def _build_json(built: BuildResult) -> dict[str, Any]:
    return {
        "rebuilt": built.rebuilt,
        "items": built.items,
        "eligible": built.eligible,
        "unsafe": built.unsafe,
        "notes": list(built.notes),
        "seconds": round(built.seconds, 2),
    }


def _print_build(built: BuildResult) -> None:
    for line in built.notes:
        print(line)
    what = "built" if built.rebuilt else "unchanged"
    print(
        f"index {what}: {built.items} item(s), {built.eligible} searchable, {built.unsafe} "
        f"masked unsafe ({built.seconds:.1f} s)"
    )


def run_remove(args: argparse.Namespace) -> int:
    from mambomeme.library.folders import remove_folders

    dropped, built = remove_folders(args.home, args.dirs, _note)
    if args.json:
        print(json.dumps({"removed": dropped, "build": _build_json(built)}, indent=2))
        return 0
    for key, count in dropped.items():
        print(f"removed {key} ({count} file(s))")
    _print_build(built)
    return 0


def run_status(args: argparse.Namespace) -> int:
    from mambomeme.library.folders import library_status

    data = library_status(args.home)
    if args.json:
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return 0
    print(f"library {data['home']}")
    if not data["folders"]:
        print("no folders yet: mambomeme add DIR")
    for folder, files in data["folders"].items():
        print(f"  {folder}: {files} file(s)")
    counts = data["state"]
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
    engines = data["ocr_engines"]
    print(f"OCR engines: {', '.join(engines) or 'none (file names and sidecars only)'}")
    return 0
