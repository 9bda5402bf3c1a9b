"""Commands that fail fast exit with their documented code every time: the item table's
background read is joined before the interpreter exits (it used to die with SIGABRT, exit 134,
"terminate called without an active exception", in a few percent of runs)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUNS = 50

# One fresh interpreter imports everything once, then forks a child per run; each child runs
# cli.main and leaves through the normal interpreter exit (thread shutdown, atexit, C++ static
# destructors) as `mambomeme ...` does, at ~0.15 s a run instead of ~1 s (gc.freeze: the
# children's exit does not walk the imported modules' objects).
FORK_SERVER = """
import gc, json, os, sys
import pandas, pyarrow.dataset, pyarrow.parquet  # what the item table's first read imports
import mambomeme.search.engine
from mambomeme import cli
cli.build_parser()
gc.freeze()
argvs, runs = json.loads(sys.argv[1]), int(sys.argv[2])
result = []
for argv in argvs:
    codes = []
    for _ in range(runs):
        pid = os.fork()
        if pid == 0:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            sys.exit(cli.main(argv))
        codes.append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))  # -6: SIGABRT
    result.append(codes)
print(json.dumps(result))
"""


def _annotator_file(path: Path, rows: list[list[str]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([["qid", "item_id", "grade", "safety"], *rows])


def _adjudicate(tmp: Path, judgements: Path, build: Path) -> list[str]:
    return [
        "adjudicate",
        "--benchmark",
        str(ROOT / "benchmarks" / "fixture"),
        "--pool",
        str(tmp / "pool"),
        "--judgements",
        str(judgements),
        "--sets-dir",
        str(tmp / "sets"),
        "--queue-out",
        str(tmp / "queue"),
        "--out",
        str(tmp / "scored"),
        "--build",
        str(build),
        "--params",
        str(ROOT / "params.yaml"),
    ]


@pytest.mark.slow
def test_fast_failing_commands_exit_with_their_documented_code_every_time(
    tmp_path: Path, fixture_build: Path
) -> None:
    pair = ["fx-entity-02", "fx:tpl-disaster-girl"]
    repeated, waiting = tmp_path / "repeated", tmp_path / "waiting"
    repeated.mkdir()
    waiting.mkdir()
    _annotator_file(repeated / "annotator-a.csv", [[*pair, "3", "safe"], [*pair, "2", "safe"]])
    _annotator_file(repeated / "annotator-b.csv", [[*pair, "3", "safe"]])
    _annotator_file(waiting / "annotator-a.csv", [[*pair, "3", "safe"]])  # b has not answered
    search = ["search", "x", "--system", "nope", "--build", str(fixture_build)]
    commands: list[tuple[list[str], int]] = [
        ([*search, "--params", str(ROOT / "params.yaml")], 2),  # unknown system
        (_adjudicate(tmp_path, repeated, fixture_build), 2),  # a pair judged twice
        (_adjudicate(tmp_path, waiting, fixture_build), 3),  # waiting for annotators
    ]
    done = subprocess.run(
        [sys.executable, "-c", FORK_SERVER, json.dumps([c for c, _ in commands]), str(RUNS)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    codes: list[list[int]] = json.loads(done.stdout.splitlines()[-1])
    for (argv, expected), got in zip(commands, codes, strict=True):
        assert Counter(got) == Counter({expected: RUNS}), (argv[0], Counter(got))


def test_the_item_loader_is_joined_at_exit(lexical_engine: Any) -> None:
    """Not a daemon: the interpreter waits for it instead of tearing Arrow down under it."""
    assert not lexical_engine.items._loader.daemon
