"""The user's library (mambomeme/library): `add`, `remove`, `status` and `search` on real
generated meme images, the real OCR engine, the real model and real builds (no mocks)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from mambomeme import cli
from mambomeme.library.defaults import DEFAULTS, DENSE_MIRRORED, MIRRORED
from mambomeme.library.synthetic import CAPTIONS, draw_meme, write_memes

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """cli.main in this process (argparse's SystemExit becomes the exit code)."""
    try:
        code = cli.main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _add(capsys: pytest.CaptureFixture[str], home: Path, *argv: str) -> dict[str, Any]:
    code, out, err = _run(capsys, "add", *argv, "--home", str(home), "--json", "--quiet")
    assert code == 0, err
    return dict(json.loads(out))


def _seed(home: Path, library: Path) -> None:
    """A new home that shares the first library's exported query encoder and embedding cache
    (they depend on the model only), so each test does not export the model again."""
    home.mkdir(parents=True)
    for name in ("query-encoder", "embed-cache"):
        shutil.copytree(library / name, home / name)


@pytest.fixture(scope="module")
def first(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Any]]:
    """(home, memes folder, the first `add` report): four captioned memes, one with a
    sidecar, one file that is not an image."""
    root = tmp_path_factory.mktemp("library")
    memes = root / "memes"
    write_memes(memes / "sub", CAPTIONS[:4])
    (memes / "sub" / "meme-00.png.yaml").write_text("title: Mordor walk\ntags: [boromir]\n")
    (memes / "notes.png").write_bytes(b"not an image")
    home = root / "home"
    try:
        code = cli.main(["add", str(memes), "--home", str(home), "--json", "--quiet"])
    except SystemExit as exc:
        code = int(exc.code or 0)
    assert code == 0
    report = json.loads((home / "library" / "library.json").read_text())
    return home, memes, report


def test_defaults_mirror_params_yaml() -> None:
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    for section in MIRRORED:
        assert DEFAULTS[section] == params[section], section
    for key in DENSE_MIRRORED:
        assert DEFAULTS["dense"][key] == params["dense"][key], key
    from mambomeme.library.defaults import KNOWLEDGE_DIR, SAFETY_MODEL_DIR

    assert KNOWLEDGE_DIR == params["ingest"]["knowledge"]
    assert SAFETY_MODEL_DIR == params["ingest"]["safety"]["model"]


def test_ocr_reads_generated_captions(tmp_path: Path) -> None:
    pytest.importorskip("rapidocr_onnxruntime")
    from mambomeme.library.ocr import char_accuracy, open_engine

    engine = open_engine("auto")
    assert engine is not None and engine.name == "rapidocr"  # the engine that ships
    for path, caption in write_memes(tmp_path, CAPTIONS[4:9]):
        assert char_accuracy(caption, engine.read(path)) >= 0.9, caption
    assert char_accuracy("One does not simply", "ONE DOES NOT SIMPLY!") == 1.0
    assert char_accuracy("one does", "onedoes") == 1 - 1 / len("one does")


def test_add_is_incremental(
    first: tuple[Path, Path, dict[str, Any]], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    home, memes, record = first
    assert record["counts"]["accepted"] == 4
    assert [Path(p).name for p, _ in record["rejects"]] == ["notes.png"]
    # a second run reads, OCRs and embeds nothing, and keeps the build
    again = _add(capsys, home, str(memes))
    assert again["counts"] == {
        "added": 0, "updated": 0, "unchanged": 4, "removed": 0, "skipped": 1,
    }  # fmt: skip
    assert again["ocr"]["read"] == 0 and again["build"]["rebuilt"] is False
    assert "cannot identify image" in again["skipped"][str(memes / "notes.png")]
    # a changed file is read again; a deleted one is gone; a new one is added
    changed, deleted = memes / "sub" / "meme-01.png", memes / "sub" / "meme-02.png"
    draw_meme("pineapple pizza", "is a crime", seed=7).save(changed)
    deleted.unlink()
    draw_meme("new folder", "new meme", seed=8).save(memes / "new.png")
    third = _add(capsys, home)  # no folder: rescan the library's folders
    assert third["counts"] == {
        "added": 1, "updated": 1, "unchanged": 2, "removed": 1, "skipped": 1,
    }  # fmt: skip
    assert third["updated"] == [str(changed)] and third["removed"] == [str(deleted)]
    assert third["build"]["rebuilt"] is True and third["build"]["items"] == 4
    code, out, _ = _run(capsys, "search", "pineapple pizza crime", "--home", str(home), "--paths")
    assert code == 0 and out.splitlines()[0] == str(changed)
    code, out, _ = _run(capsys, "search", "test my code production", "--home", str(home), "--paths")
    assert str(deleted) not in out
    code, out, _ = _run(capsys, "status", "--home", str(home), "--json")
    status = json.loads(out)
    assert code == 0 and status["build"]["up_to_date"] is True
    assert status["build"]["counts"]["accepted"] == 4


def test_search_from_anywhere_and_for_scripts(
    first: tuple[Path, Path, dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    home, memes, _ = first
    monkeypatch.setenv("MAMBOMEME_HOME", str(home))
    monkeypatch.chdir(tmp_path)  # no params.yaml here: the library is the default
    code, out, err = _run(capsys, "search", "walk into mordor", "--paths")
    assert code == 0, err
    paths = out.splitlines()
    assert paths and all(Path(p).is_absolute() and Path(p).is_file() for p in paths)
    assert paths[0] == str(memes / "sub" / "meme-00.png")
    code, out, _ = _run(capsys, "search", "boromir", "--paths", "-0")  # the sidecar's tags
    assert code == 0 and out.endswith("\0") and out.split("\0")[0] == paths[0]
    code, out, err = _run(capsys, "search", "walk into mordor", "--json")
    data = json.loads(out)
    assert code == 0 and data["release"] == "library" and "served from" not in out
    assert data["results"][0]["preview"] == paths[0] and data["results"][0]["title"] == (
        "Mordor walk"
    )
    code, out, err = _run(capsys, "search", "walk into mordor")
    assert code == 0 and "served from library" in err and "served from" not in out
    code, out, err = _run(capsys, "search", "xylophone quartz zebra", "--system", "bm25")
    assert code == 1 and out == "" and "no confident match" in err
    code, out, err = _run(capsys, "search", "mordor", "--template", "Nope")
    assert code == 2 and "'Nope'" in err and out == ""
    code, out, err = _run(capsys, "search", "mordor", "--language", "klingon")
    assert code == 2 and "'klingon'" in err and "known: en" in err
    code, out, err = _run(capsys, "search", "mordor", "--limit")
    assert code == 2
    monkeypatch.setenv("MAMBOMEME_HOME", str(tmp_path / "nothing-here"))
    code, out, err = _run(capsys, "search", "mordor")
    assert code == 2 and "mambomeme add DIR" in err


def test_without_ocr_names_and_sidecars_are_indexed(
    first: tuple[Path, Path, dict[str, Any]], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    home = tmp_path / "home"
    _seed(home, first[0])
    memes = tmp_path / "memes"
    write_memes(memes, CAPTIONS[9:11])
    (memes / "meme-00.png.json").write_text('{"title": "nobody got time", "tags": ["sweet"]}')
    code, out, err = _run(capsys, "add", str(memes), "--home", str(home), "--ocr", "none", "--json")
    assert code == 0 and err.count("OCR off") == 1
    assert json.loads(out)["counts"]["added"] == 2
    code, out, _ = _run(capsys, "search", "sweet", "--home", str(home), "--paths")
    assert out.splitlines() == [str(memes / "meme-00.png")]
    code, out, _ = _run(capsys, "remove", str(memes), "--home", str(home))
    assert code == 0 and "removed" in out
    code, out, err = _run(capsys, "search", "sweet", "--home", str(home))
    assert code == 2 and "no library" in err


def _state_rows(state: Path) -> int:
    try:
        with sqlite3.connect(f"file:{state}?mode=ro", uri=True) as db:
            return int(db.execute("SELECT COUNT(*) FROM files").fetchone()[0])
    except sqlite3.Error:
        return 0


def test_a_killed_add_resumes(
    first: tuple[Path, Path, dict[str, Any]], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    home = tmp_path / "home"
    _seed(home, first[0])
    memes = tmp_path / "memes"
    images = [p for p, _ in write_memes(memes, CAPTIONS[11:16])]
    env = {**os.environ, "MAMBOMEME_LIBRARY_SLOW_S": "1.0"}
    command = [sys.executable, "-m", "mambomeme.cli", "add", str(memes), "--home", str(home)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while _state_rows(home / "state.sqlite") < 2 and time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[1].decode()[-2000:]
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    kept = _state_rows(home / "state.sqlite")
    assert 2 <= kept < len(images) and not (home / "library").exists()
    resumed = _add(capsys, home, str(memes))
    assert resumed["counts"]["unchanged"] == kept
    assert resumed["counts"]["added"] == len(images) - kept
    assert resumed["ocr"]["read"] == len(images) - kept
    lines = (home / "library" / "records.jsonl").read_text().splitlines()
    previews = sorted(json.loads(line)["preview"] for line in lines)
    assert previews == sorted(str(p) for p in images)  # every image indexed once
