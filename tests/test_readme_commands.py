"""The README's commands work as written: every `mambomeme ...` line of its code blocks parses
with the command-line parser (a known command, known options), and its read-only `dvc` lines
(metrics, plots) run under the pinned DVC (`--targets` was an unrecognised argument there)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from mambomeme import cli

ROOT = Path(__file__).resolve().parents[1]
LINE = re.compile(r"^ {4}(?:\$ )?(?:\.venv/bin/)?((?:mambomeme|dvc)\b.*)$")


def _commands(tool: str) -> list[list[str]]:
    found = []
    for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines():
        match = LINE.match(line)
        if match:
            words = shlex.split(match.group(1), comments=True)
            if words and words[0] == tool:
                found.append(words[1:])
    return found


def test_the_readme_names_commands() -> None:
    assert len(_commands("mambomeme")) >= 6 and len(_commands("dvc")) >= 3


@pytest.mark.parametrize("argv", _commands("mambomeme"), ids=" ".join)
def test_each_mambomeme_line_parses(argv: list[str]) -> None:
    argv = argv or ["tui"]  # a bare `mambomeme` opens the terminal UI
    parser = cli.build_parser(argv[0])
    args = parser.parse_args(argv)  # SystemExit(2) on an unknown command or option
    assert callable(args.handler)


@pytest.mark.parametrize(
    "argv", [a for a in _commands("dvc") if a[0] in ("metrics", "plots")], ids=" ".join
)
def test_each_read_only_dvc_line_runs(argv: list[str]) -> None:
    dvc = Path(sys.executable).parent / "dvc"
    done = subprocess.run([str(dvc), *argv], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()
