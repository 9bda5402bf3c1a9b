"""`mambomeme add DIR...`, `remove DIR...`, `status`, `library masked|allow|deny`: the user's own
library (library/folders.py).

Progress bars and notes go to stderr; what the command did goes to stdout (or JSON with
--json), so `add` can be scripted. `library masked` lists what the safety mask hides and why;
`library allow PATH` / `deny PATH` keep the owner's word over it. Exit 0, 2 on an error, 3 when
another command holds the library's writer lock past --wait (cli.main).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mambomeme.cli.search import emit

if TYPE_CHECKING:
    from mambomeme.library.build import BuildResult


def add_home_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--home",
        type=Path,
        help="library folder (default $MAMBOMEME_HOME, else $XDG_DATA_HOME/mambomeme, "
        "else ~/.local/share/mambomeme)",
    )


def add_wait_argument(p: argparse.ArgumentParser) -> None:
    from mambomeme.library.defaults import LOCK_WAIT_S

    p.add_argument(
        "--wait",
        type=float,
        default=LOCK_WAIT_S,
        metavar="SECONDS",
        help="how long to wait for another add/remove/allow/deny on the same library before "
        f"giving up with exit 3 (default {LOCK_WAIT_S:g})",
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
    a.add_argument(
        "--executor",
        choices=("in-process", "ray"),
        help="where OCR, safety scoring and embedding run (default in-process; ray: Ray Data "
        "actors, a local Ray unless --ray-address; docs/scaling.md)",
    )
    a.add_argument(
        "--ray-address",
        default="",
        metavar="ADDR",
        help="with --executor ray: the cluster to join (auto, ray://HEAD:10001); "
        "default a local Ray started and stopped by this run",
    )
    add_home_argument(a)
    add_wait_argument(a)
    a.set_defaults(handler=run_add)

    r = sub.add_parser("remove", help="drop folders from your library")
    r.add_argument("dirs", nargs="+", type=Path, metavar="DIR")
    r.add_argument("--json", action="store_true")
    add_home_argument(r)
    add_wait_argument(r)
    r.set_defaults(handler=run_remove)

    s = sub.add_parser("status", help="what your library holds")
    s.add_argument("--json", action="store_true")
    add_home_argument(s)
    s.set_defaults(handler=run_status)

    lib = sub.add_parser("library", help="what the safety mask hides in your library; overrides")
    actions = lib.add_subparsers(dest="action", required=True)
    m = actions.add_parser("masked", help="list the masked files and why")
    m.add_argument("--json", action="store_true")
    add_home_argument(m)
    m.set_defaults(handler=run_masked)
    for name, what in (("allow", "searchable whatever the safety mask says"),
                       ("deny", "hidden from every search")):  # fmt: skip
        o = actions.add_parser(name, help=f"make one file of your library {what}")
        o.add_argument("path", type=Path, metavar="PATH")
        add_home_argument(o)
        add_wait_argument(o)
        o.set_defaults(handler=run_override, decision=name)


def out(line: str) -> None:
    """Print one line of a command's result; a file name that is not UTF-8 goes out as its own
    bytes (surrogate escapes back to bytes, as `ls` prints it to a pipe)."""
    try:
        data = (line + "\n").encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no file name decodes to
        data = (line + "\n").encode("utf-8", "backslashreplace")
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a text-only stream (tests' StringIO)
        sys.stdout.write(data.decode("utf-8", "replace"))
        return
    sys.stdout.flush()
    buffer.write(data)
    buffer.flush()


def _note(line: str) -> None:
    print(f"mambomeme: {line}", file=sys.stderr, flush=True)


def run_add(args: argparse.Namespace) -> int:
    from mambomeme.library.folders import add_folders

    if args.quiet:
        from mambomeme.cli.quiet import silence_progress_bars

        silence_progress_bars()
    executor = None
    if args.executor is not None or args.ray_address:
        from mambomeme.errors import ExecutorError
        from mambomeme.index.ray_map import ExecutorConfig

        if args.ray_address and args.executor != "ray":
            raise ExecutorError("--ray-address ADDR needs --executor ray")
        executor = ExecutorConfig(args.executor, args.ray_address)
    done = add_folders(args.home, args.dirs, args.ocr, not args.quiet, _note, args.wait, executor)
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
        from mambomeme.library.folders import masked_files

        data["masked"] = masked_files(args.home) if built.items else []
        emit(json.dumps(data, indent=2, ensure_ascii=False))
        return 0
    counts, folders = data["counts"], done.folders
    out(f"library {done.library.home} ({len(folders)} folder{'s' * (len(folders) != 1)})")
    out(", ".join(f"{name} {counts[name]}" for name in counts))
    for label, paths in (("added", report.added), ("updated", report.updated),
                         ("removed", report.removed)):  # fmt: skip
        for path in paths[:10]:
            out(f"  {label} {path}")
        if len(paths) > 10:
            out(f"  ... {len(paths) - 10} more {label}")
    for path, reason in sorted(skipped.items()):
        out(f"  skipped {path}: {reason}")
    if done.ocr is not None:
        failed = f", {len(report.ocr_failed)} failed" if report.ocr_failed else ""
        out(f"OCR ({done.ocr.name}): {report.ocr_read} image(s) read{failed}")
    _print_build(built, args.home)
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


MASKED_SHOWN = 20  # `add` names this many masked files; `library masked` lists them all


def _print_build(built: BuildResult, home: Path | None = None) -> None:
    for line in built.notes:
        out(line)
    if built.unsafe:
        from mambomeme.library.folders import masked_files

        masked = masked_files(home)
        for entry in masked[:MASKED_SHOWN]:
            out(f"  masked {entry['path']}: {entry['reason']}")
        if len(masked) > MASKED_SHOWN:
            out(f"  ... {len(masked) - MASKED_SHOWN} more masked: mambomeme library masked")
    what = "built" if built.rebuilt else "unchanged"
    out(
        f"index {what}: {built.items} item(s), {built.eligible} searchable, {built.unsafe} "
        f"masked unsafe ({built.seconds:.1f} s)"
    )


def run_remove(args: argparse.Namespace) -> int:
    from mambomeme.library.folders import remove_folders

    dropped, built = remove_folders(args.home, args.dirs, _note, args.wait)
    if args.json:
        emit(json.dumps({"removed": dropped, "build": _build_json(built)}, indent=2))
        return 0
    for key, count in dropped.items():
        out(f"removed {key} ({count} file(s))")
    _print_build(built, args.home)
    return 0


def run_masked(args: argparse.Namespace) -> int:
    from mambomeme.library.folders import masked_files

    masked = masked_files(args.home)
    if args.json:
        emit(json.dumps(masked, indent=2, ensure_ascii=False))
        return 0
    for entry in masked:
        out(f"{entry['path']}\t{entry['reason']}")
    print(
        f"mambomeme: {len(masked)} file(s) masked; `mambomeme library allow PATH` shows one",
        file=sys.stderr,
    )
    return 0


def run_override(args: argparse.Namespace) -> int:
    from mambomeme.library.folders import set_override

    path, built = set_override(args.home, args.path, args.decision, _note, args.wait)
    what = "searchable" if args.decision == "allow" else "hidden"
    out(f"{args.decision} {path}: {what} from now on")
    _print_build(built, args.home)
    return 0


def run_status(args: argparse.Namespace) -> int:
    from mambomeme.library.folders import library_status

    data = library_status(args.home)
    if args.json:
        emit(json.dumps(data, indent=2, ensure_ascii=False))
        return 0
    out(f"library {data['home']}")
    if not data["folders"]:
        out("no folders yet: mambomeme add DIR")
    for folder, files in data["folders"].items():
        out(f"  {folder}: {files} file(s)")
    counts = data["state"]
    if counts:
        out(
            f"files {counts['files']} ({counts['skipped']} skipped), images {counts['images']} "
            f"({counts['without_ocr']} without OCR text)"
        )
    build = data["build"]
    if build["path"]:
        c = build["counts"]
        fresh = "up to date" if build["up_to_date"] else "out of date: run `mambomeme add`"
        out(
            f"index {build['path']}: {c.get('accepted', 0)} item(s), {c.get('eligible', 0)} "
            f"searchable, built {build['built_at']} ({fresh})"
        )
        for line in build["notes"]:
            out(f"  {line}")
    else:
        out("no index yet")
    engines = data["ocr_engines"]
    out(f"OCR engines: {', '.join(engines) or 'none (file names and sidecars only)'}")
    return 0
