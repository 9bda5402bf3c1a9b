"""The command table: each top-level command is registered by the module cli.py names, so
`mambomeme CMD` can import only that module."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys

from mambomeme import cli


def test_the_command_table_is_what_the_modules_register() -> None:
    registered: dict[str, str] = {}
    for module_name in cli.MODULES:
        parser = argparse.ArgumentParser()
        sub = parser.add_subparsers()
        importlib.import_module(module_name).register(sub)
        for name in sub.choices:
            registered[name] = module_name
    assert registered == cli.COMMAND_MODULES


def test_one_command_builds_only_its_own_parser() -> None:
    parser = cli.build_parser("search")
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert sorted(sub.choices) == ["search"]
    full = cli.build_parser(None)
    sub = next(a for a in full._actions if isinstance(a, argparse._SubParsersAction))
    assert sorted(sub.choices) == sorted(cli.COMMAND_MODULES)


def test_search_does_not_import_the_evaluation_or_release_commands() -> None:
    code = (
        "import sys; from mambomeme import cli; cli.build_parser('search'); "
        "print(sorted(m for m in sys.modules if m.startswith(('mambomeme.evaluation', "
        "'mambomeme.release.commands', 'mambomeme.tui', 'pandas'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_an_unknown_command_still_lists_every_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mambomeme.cli", "nope"], capture_output=True, text=True
    )
    assert done.returncode == 2
    assert "invalid choice: 'nope'" in done.stderr and "'search'" in done.stderr
