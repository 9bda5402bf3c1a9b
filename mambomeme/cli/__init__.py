"""The `mambomeme` command: every argparse command lives in this package, one module per command
group (search, evaluation, annotate, tui, bench, safety, library, release). Library errors become
messages and exit codes here only; the library itself returns values and raises typed errors."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from mambomeme.errors import (
    ArtifactIntegrityError,
    ExposedBenchmarkError,
    HoldoutNotAllowedError,
    LibraryBusyError,
    MamboMemeError,
    ReleaseIntegrityError,
)

# Exit statuses of a command that raised a library error: 2 in general (a usage or input error);
# 3 when `adjudicate` waits for annotators (AnnotationsPendingError: nothing frozen or scored);
# 4 when the release protocol refused to run or score a hidden benchmark (no frozen selection,
# one from another corpus or dev checksum, or a version already exposed to another selection).
# 3 also when another command holds the library's writer lock past --wait (LibraryBusyError);
# 4 also for a corrupt artifact (ArtifactIntegrityError, ReleaseIntegrityError: not served).
EXIT_ERROR = 2
EXIT_WAITING = 3
EXIT_PROTOCOL_REFUSED = 4
EXIT_CORRUPT = 4

COMMANDS: dict[str, argparse.ArgumentParser] = {}
# Which module registers each top-level command. `mambomeme search ...` imports only the module
# it runs (the others pull in the evaluation and release code: ~0.1 s of every start);
# `mambomeme --help`, a bare `mambomeme` and an unknown command build the whole parser.
# tests/test_cli.py checks this table against what the modules register.
COMMAND_MODULES: dict[str, str] = {
    "search": "mambomeme.cli.search",
    "run": "mambomeme.cli.evaluation",
    "score": "mambomeme.cli.evaluation",
    "pool": "mambomeme.cli.annotate",
    "import-annotations": "mambomeme.cli.annotate",
    "adjudicate": "mambomeme.cli.annotate",
    "publish": "mambomeme.cli.release",
    "rollback": "mambomeme.cli.release",
    "release": "mambomeme.cli.release",
    "bench-engine": "mambomeme.cli.bench",
    "tui": "mambomeme.cli.tui",
    "bench": "mambomeme.cli.tui",
    "feedback": "mambomeme.cli.tui",
    "safety": "mambomeme.cli.safety",
    "add": "mambomeme.cli.library",
    "remove": "mambomeme.cli.library",
    "status": "mambomeme.cli.library",
    "library": "mambomeme.cli.library",
}
MODULES: tuple[str, ...] = tuple(dict.fromkeys(COMMAND_MODULES.values()))
HELP = ("-h", "--help")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser: with `command`, only the module that registers it."""
    parser = argparse.ArgumentParser(prog="mambomeme", description="Local meme search.")
    sub = parser.add_subparsers(dest="command")
    wanted = COMMAND_MODULES.get(command or "")
    for module_name in (wanted,) if wanted else MODULES:
        try:
            module = __import__(module_name, fromlist=["register"])
        except ModuleNotFoundError as exc:
            if not (exc.name and module_name.startswith(exc.name)):
                raise
            continue
        module.register(sub)
    COMMANDS.update(sub.choices)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0].startswith("-") and argv[0] not in HELP):
        argv = ["tui", *argv]  # plain `mambomeme [--print-choice] [--query TEXT]` opens the UI
    parser = build_parser(argv[0])
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    try:
        return int(args.handler(args))
    except (HoldoutNotAllowedError, ExposedBenchmarkError) as exc:
        print(f"mambomeme: refused by the release protocol: {exc}", file=sys.stderr)
        return EXIT_PROTOCOL_REFUSED
    except LibraryBusyError as exc:
        print(f"mambomeme: busy: {exc}", file=sys.stderr)
        return EXIT_WAITING
    except (ArtifactIntegrityError, ReleaseIntegrityError) as exc:
        print(f"mambomeme: corrupt artifact: {exc}", file=sys.stderr)
        return EXIT_CORRUPT
    except MamboMemeError as exc:
        print(f"mambomeme: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
