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

import pytest

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


def _usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as stop:
        cli.main(argv)
    assert stop.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize("query", ["-_-", "-1", "-0.5"])
def test_a_query_that_starts_with_a_dash_gets_a_hint_to_use_double_dash(
    query: str, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _usage_error(["search", query], capsys)
    assert "hint: a query that starts with '-' goes last, after '--'" in err
    assert "mambomeme search [options] -- '-_-'" in err


def test_an_unknown_long_option_gets_no_dash_hint(capsys: pytest.CaptureFixture[str]) -> None:
    err = _usage_error(["search", "cat", "--nope"], capsys)
    assert "unrecognized arguments: --nope" in err and "hint" not in err


def test_a_query_after_double_dash_is_the_query() -> None:
    args = cli.build_parser("search").parse_args(["search", "--limit", "3", "--", "-_-"])
    assert args.query == "-_-" and args.limit == 3


@pytest.mark.parametrize("spelling", [["--limit", "-1"], ["--limit=-1"]])
def test_a_negative_limit_is_refused_the_same_in_either_spelling(
    spelling: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    err = _usage_error(["search", *spelling, "cat"], capsys)
    assert "argument --limit: must be at least 1, got -1" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-0", "cat"], "argument -0/--null: only with --paths"),
        (["--null", "--json", "cat"], "argument -0/--null: only with --paths"),
        (["--json", "--paths", "cat"], "argument --paths: not allowed with argument --json"),
    ],
)
def test_dangling_or_conflicting_output_options_are_refused(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert message in _usage_error(["search", *argv], capsys)


def test_filter_values_match_in_any_case() -> None:
    parser = cli.build_parser("search")
    args = parser.parse_args(["search", "--kind", "TEMPLATE", "--template", "JOHN CENA", "x"])
    assert args.kind == "template" and args.template == "JOHN CENA"  # the engine casefolds it


def test_quiet_turns_off_every_progress_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    import tqdm

    from mambomeme.cli import quiet

    monkeypatch.setattr(tqdm.tqdm, "__init__", tqdm.tqdm.__init__)  # restored afterwards
    for name in quiet.QUIET_ENV:
        monkeypatch.delenv(name, raising=False)
    quiet.silence_progress_bars()
    out = io.StringIO()
    for _ in tqdm.tqdm(range(3), desc="embedding shards", disable=False, file=out):
        pass  # a bar that passes disable= itself, as index/embed_cache.py does
    assert out.getvalue() == ""
    import os

    assert os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1"  # huggingface_hub, transformers
    assert os.environ["TRANSFORMERS_VERBOSITY"] == "error"
