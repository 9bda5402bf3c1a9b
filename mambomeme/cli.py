"""The `mambomeme` command. Library errors become messages and exit codes here only."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from mambomeme.errors import MamboMemeError

COMMANDS: dict[str, argparse.ArgumentParser] = {}
HELP = ("-h", "--help")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mambomeme", description="Local meme search.")
    sub = parser.add_subparsers(dest="command")
    from mambomeme import cli_search

    cli_search.register(sub)
    for module_name in (
        "mambomeme.evaluation.commands",
        "mambomeme.evaluation.annotate_commands",
        "mambomeme.release.commands",
        "mambomeme.bench.commands",
        "mambomeme.tui.commands",
        "mambomeme.moderation.commands",
        "mambomeme.library.commands",
    ):
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
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if "tui" in COMMANDS and (not argv or (argv[0].startswith("-") and argv[0] not in HELP)):
        argv = ["tui", *argv]  # plain `mambomeme [--print-choice] [--query TEXT]` opens the UI
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    try:
        return int(args.handler(args))
    except MamboMemeError as exc:
        print(f"mambomeme: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
