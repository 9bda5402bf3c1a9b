"""The command table: each top-level command is registered by the mambomeme/cli/ module that
cli/__init__.py names, so `mambomeme CMD` can import only that module; and argparse stays in
cli/: the library takes typed arguments, never a parsed Namespace."""

from __future__ import annotations

import argparse
import ast
import importlib
import subprocess
import sys
from pathlib import Path

from mambomeme import cli

PACKAGE = Path(__file__).resolve().parents[1] / "mambomeme"


def test_the_command_table_is_what_the_modules_register() -> None:
    registered: dict[str, str] = {}
    for module_name in cli.MODULES:
        parser = argparse.ArgumentParser()
        sub = parser.add_subparsers()
        importlib.import_module(module_name).register(sub)
        for name in sub.choices:
            registered[name] = module_name
    assert registered == cli.COMMAND_MODULES


def test_every_command_module_lives_in_the_cli_package() -> None:
    for command, module_name in cli.COMMAND_MODULES.items():
        assert module_name.startswith("mambomeme.cli."), command
        assert (PACKAGE / "cli" / f"{module_name.rsplit('.', 1)[1]}.py").is_file(), command


def _imports_argparse(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import) and any(a.name == "argparse" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.module == "argparse":
            return True
    return False


def test_no_module_outside_the_cli_package_imports_argparse() -> None:
    outside = [p for p in sorted(PACKAGE.rglob("*.py")) if (PACKAGE / "cli") not in p.parents]
    offenders = [str(p.relative_to(PACKAGE)) for p in outside if _imports_argparse(p)]
    assert offenders == []


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
        "'mambomeme.release', 'mambomeme.tui', 'pandas', 'torch')) "
        "or (m.startswith('mambomeme.cli.') and m != 'mambomeme.cli.search')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_an_unknown_command_still_lists_every_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mambomeme.cli", "nope"], capture_output=True, text=True
    )
    assert done.returncode == 2
    assert "invalid choice: 'nope'" in done.stderr and "'search'" in done.stderr
