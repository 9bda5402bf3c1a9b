"""Exit statuses live on the error classes (errors.py `exit_code`; docs/CONTRACTS.md "Exit
statuses"): the table matches the classes, and each documented failure exits with its code
both from the CLI (`python -m mambomeme.cli ...`) and from a stage script
(`python stages/NAME.py ...`), each run as a real subprocess on bad inputs in tmp dirs."""

from __future__ import annotations

import inspect
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from mambomeme import errors
from mambomeme.errors import MamboMemeError

ROOT = Path(__file__).resolve().parents[1]
PARAMS = ROOT / "params.yaml"


def documented() -> dict[int, list[str]]:
    """code -> the error classes its row of docs/CONTRACTS.md names."""
    text = (ROOT / "docs" / "CONTRACTS.md").read_text(encoding="utf-8")
    section = text.split("## Exit statuses", 1)[1].split("\n## ", 1)[0]
    table: dict[int, list[str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].isdigit():
            names = [n.strip(" `") for n in cells[2].split(",") if n.strip()]
            table[int(cells[0])] = [n.split(" ")[0].strip("`") for n in names]
    return table


def error_classes() -> Iterator[type[MamboMemeError]]:
    for _, cls in inspect.getmembers(errors, inspect.isclass):
        if issubclass(cls, MamboMemeError):
            yield cls


def test_the_table_is_the_classes() -> None:
    """Every class the table names has that code; every other error class inherits the code
    of its nearest ancestor the table names."""
    table = documented()
    assert sorted(table) == [0, 1, 2, 3, 4]
    named = {name: code for code, names in table.items() for name in names}
    assert named["MamboMemeError"] == 2
    for cls in error_classes():
        ancestor = next(c for c in cls.__mro__ if c.__name__ in named)
        assert cls.exit_code == named[ancestor.__name__], cls.__name__


def test_the_cli_names_are_the_class_codes() -> None:
    from mambomeme import cli

    assert (cli.EXIT_ERROR, cli.EXIT_WAITING) == (2, 3)
    assert (cli.EXIT_PROTOCOL_REFUSED, cli.EXIT_CORRUPT) == (4, 4)


# -- each documented failure, through the CLI and through a stage ------------------------------


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    return subprocess.run(
        [sys.executable, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _run(["-m", "mambomeme.cli", *args], cwd)


def stage(cwd: Path, name: str, *args: str) -> subprocess.CompletedProcess[str]:
    return _run([str(ROOT / "stages" / f"{name}.py"), *args], cwd)


@pytest.fixture(scope="module")
def lexical_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture's items and lexical index (no model needed)."""
    from lexical_support import build_fixture_lexical

    from mambomeme.config import load_params

    build = tmp_path_factory.mktemp("exit-codes-build")
    build_fixture_lexical(build, load_params(PARAMS)["lexical"]["weights"])
    return build


@pytest.fixture
def corrupt_build(tmp_path: Path, lexical_build: Path) -> Path:
    """A copy of the build whose item table is not Parquet any more."""
    copy = tmp_path / "corrupt-build"
    shutil.copytree(lexical_build, copy)
    (copy / "items.parquet").write_bytes(b"not a parquet file" * 64)
    return copy


def workdir(tmp_path: Path, build: Path | None = None) -> Path:
    """A pipeline folder in tmp: params.yaml, benchmarks/ and (when given) build/fixture."""
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(PARAMS, work / "params.yaml")
    (work / "benchmarks").symlink_to(ROOT / "benchmarks")
    if build is not None:
        (work / "build").mkdir()
        (work / "build" / "fixture").symlink_to(build)
    return work


def hidden_benchmark(dest: Path) -> Path:
    """benchmarks/fixture relabelled "partition": "hidden" (our own dev data, no real hidden
    content)."""
    import json

    shutil.copytree(ROOT / "benchmarks" / "fixture", dest)
    meta = dest / "benchmark.json"
    meta.write_text(
        json.dumps({**json.loads(meta.read_text("utf-8")), "partition": "hidden"}), "utf-8"
    )
    return dest


def test_input_error_exits_2(tmp_path: Path) -> None:
    done = cli(tmp_path, "search", "--params", str(tmp_path / "absent.yaml"), "--", "cat")
    assert done.returncode == 2, done.stderr[-2000:]
    assert "mambomeme: error: cannot read params file" in done.stderr
    done = stage(tmp_path, "index_lexical", "--corpus", "fixture")  # no params.yaml here
    assert done.returncode == 2, done.stderr[-2000:]
    assert "stage failed: error: cannot read params file params.yaml" in done.stderr


def test_waiting_for_annotators_exits_3(tmp_path: Path, lexical_build: Path) -> None:
    """AnnotationsPendingError: no annotator files yet; nothing is frozen or scored."""
    out = tmp_path / "cli"
    done = cli(
        tmp_path,
        "adjudicate",
        "--benchmark", str(ROOT / "benchmarks" / "fixture"),
        "--pool", str(out / "pool"),
        "--judgements", str(out / "judgements"),
        "--sets-dir", str(out / "sets"),
        "--queue-out", str(out / "queue"),
        "--out", str(out / "scored"),
        "--build", str(lexical_build),
        "--params", str(PARAMS),
    )  # fmt: skip
    assert done.returncode == 3, done.stderr[-2000:]
    assert "waiting for annotator files" in done.stdout
    assert not (out / "sets").exists() and not (out / "scored").exists()
    work = workdir(tmp_path, lexical_build)
    done = stage(work, "adjudicate", "--corpus", "fixture")
    assert done.returncode == 3, done.stderr[-2000:]
    assert "stage failed: waiting for annotators: waiting for annotator files" in done.stderr
    assert not (work / "judgement-sets").exists()


def test_library_busy_exits_3(tmp_path: Path) -> None:
    """LibraryBusyError: another command holds the library's writer lock past --wait. Only
    the CLI changes the library (no stage does)."""
    from mambomeme.library import Library
    from mambomeme.library.lock import writer_lock

    home, memes = tmp_path / "home", tmp_path / "memes"
    memes.mkdir()
    with writer_lock(Library.at(home), 0):
        done = cli(tmp_path, "add", str(memes), "--home", str(home), "--ocr", "none", "--wait", "0")
    assert done.returncode == 3, done.stderr[-2000:]
    assert "mambomeme: busy: another mambomeme command is changing the library" in done.stderr


def test_protocol_refusal_exits_4(tmp_path: Path, lexical_build: Path) -> None:
    """The CLI refuses to run a hidden benchmark without a frozen selection
    (HoldoutNotAllowedError); the tune stage refuses to tune on one (TuningOnHiddenError)."""
    hidden = hidden_benchmark(tmp_path / "hidden")
    done = cli(
        tmp_path,
        "run",
        "--benchmark", str(hidden),
        "--system", "bm25",
        "--out", str(tmp_path / "runs" / "bm25.trec"),
        "--build", str(lexical_build),
        "--corpus-manifest", str(lexical_build / "corpus-fixture.json"),
        "--params", str(PARAMS),
        "--selection", str(tmp_path / "no-selection.json"),
        "--ledger", str(tmp_path / "exposed.jsonl"),
    )  # fmt: skip
    assert done.returncode == 4, done.stderr[-2000:]
    assert "mambomeme: refused by the release protocol:" in done.stderr
    assert not (tmp_path / "runs" / "bm25.trec").exists()
    work = workdir(tmp_path, lexical_build)
    reports = yaml.safe_load(PARAMS.read_text("utf-8"))["corpora"]["fixture"]["reports"]
    hidden_benchmark(work / reports / "benchmark")  # what the tune stage reads
    done = stage(work, "tune", "--corpus", "fixture")
    assert done.returncode == 4, done.stderr[-2000:]
    assert "stage failed: refused by the release protocol: benchmark" in done.stderr


def test_corrupt_artifact_exits_4(tmp_path: Path, corrupt_build: Path) -> None:
    """ArtifactIntegrityError: a build whose item table is corrupt is not served, from the
    CLI's search or from a stage that reads the build."""
    done = cli(
        tmp_path, "search", "--build", str(corrupt_build), "--params", str(PARAMS), "--", "cat"
    )
    assert done.returncode == 4, done.stderr[-2000:]
    assert "mambomeme: corrupt artifact:" in done.stderr and "items.parquet" in done.stderr
    work = workdir(tmp_path)
    done = stage(work, "train_reranker", "--corpus", "fixture", "--build", str(corrupt_build))
    assert done.returncode == 4, done.stderr[-2000:]
    assert "stage failed: corrupt artifact:" in done.stderr and "items.parquet" in done.stderr
