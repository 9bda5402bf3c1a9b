"""The `mambomeme` command: every argparse command lives in this package, one module per command
group (search, evaluation, annotate, tui, bench, safety, library, release). Library errors become
messages and exit codes here only; the library itself returns values and raises typed errors."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from typing import NoReturn

from mambomeme.errors import (
    AnnotationsPendingError,
    ArtifactIntegrityError,
    HoldoutNotAllowedError,
    MamboMemeError,
)

# Exit statuses live on the error classes (`MamboMemeError.exit_code`; the table is
# docs/CONTRACTS.md "Exit statuses"): a command that raised a library error exits with its
# class's code, as a stage script does. These names are kept for the commands that return one.
EXIT_ERROR = MamboMemeError.exit_code  # 2: a usage or input error
EXIT_WAITING = AnnotationsPendingError.exit_code  # 3: waiting for annotators (or a lock)
EXIT_PROTOCOL_REFUSED = HoldoutNotAllowedError.exit_code  # 4: the release protocol refused
EXIT_CORRUPT = ArtifactIntegrityError.exit_code  # 4: a corrupt artifact, not served

COMMANDS: dict[str, argparse.ArgumentParser] = {}
# Which module registers each top-level command. `mambomeme search ...` imports only the module
# it runs (the others pull in the evaluation and release code: ~0.1 s of every start);
# `mambomeme --help`, a bare `mambomeme` and an unknown command build the whole parser.
# tests/test_cli.py checks this table against what the modules register.
COMMAND_MODULES: dict[str, str] = {
    "search": "mambomeme.cli.search",
    "serve": "mambomeme.cli.serve",
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
_NEGATIVE = re.compile(r"-\d+(\.\d*)?")
_OPTION_LIKE = re.compile(r"--?[A-Za-z][\w-]*(=.*)?")


class Parser(argparse.ArgumentParser):
    """argparse with two habits fixed for every command:

    - `--limit -1` means what `--limit=-1` means: a negative number after an option that takes a
      value is that value (argparse reads it as an option once a command has an option like -0),
      so both spellings get the same refusal from the option's type;
    - a usage error caused by an argument that starts with '-' (a query such as "-_-" or "-1")
      says to put it after `--`.
    """

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if args is not None:
            args = self._join_negative_values(list(args))
        return super().parse_known_args(args, namespace)

    def _join_negative_values(self, args: list[str]) -> list[str]:
        out: list[str] = []
        i = 0
        while i < len(args):
            token = args[i]
            if token == "--":
                out.extend(args[i:])
                break
            action = self._option_string_actions.get(token)
            takes_one = action is not None and action.nargs is None and action.const is None
            if takes_one and i + 1 < len(args) and _NEGATIVE.fullmatch(args[i + 1]):
                out.append(f"{token}={args[i + 1]}")
                i += 2
                continue
            out.append(token)
            i += 1
        return out

    def error(self, message: str) -> NoReturn:
        if _dash_argument_problem(message):
            message += (
                "\nhint: a query that starts with '-' goes last, after '--' (options first): "
                f"{self.prog} [options] -- '-_-'"
            )
        super().error(message)


def _dash_argument_problem(message: str) -> bool:
    """True when argparse refused an argument that starts with '-' but is no option's name."""
    if "the following arguments are required:" in message:
        return True
    if "ignored explicit argument" in message:  # "-0.5" read as the flag -0 with ".5"
        return True
    if message.startswith("unrecognized arguments: "):
        words = message.removeprefix("unrecognized arguments: ").split()
        return any(w.startswith("-") and not _OPTION_LIKE.fullmatch(w) for w in words)
    return False


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser: with `command`, only the module that registers it."""
    parser = Parser(prog="mambomeme", description="Local meme search.")
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
        return EXIT_ERROR
    check = getattr(args, "option_check", None)  # options that conflict or dangle: usage error
    problem = check(args) if check is not None else None
    if problem:
        COMMANDS[args.command].error(problem)
    try:
        return int(args.handler(args))
    except MamboMemeError as exc:
        print(f"mambomeme: {exc.kind}: {exc}", file=sys.stderr)
        return exc.exit_code
