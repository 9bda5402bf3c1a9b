"""The user's library as people use it (issue 35): file names that are not UTF-8, files deleted
since the last `add`, what the safety mask hides and the owner's word over it, one writer at a
time, and searches that read one whole build while `add` swaps in the next. Real images, the
real model, real builds (no mocks)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mambomeme import cli
from mambomeme.library.home import Library
from mambomeme.library.synthetic import CAPTIONS, write_memes

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow
LATIN1 = b"caf\xe9 \xff-meme.png"  # a Latin-1 name: not UTF-8


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = cli.main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _cli_bytes(*argv: str) -> subprocess.CompletedProcess[bytes]:
    """The CLI in a subprocess, stdout as bytes (what `xargs -0` would read)."""
    package = Path(cli.__file__).resolve().parents[2]  # the mambomeme this test imports
    env = {**os.environ, "PYTHONPATH": str(package), "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "mambomeme.cli", *argv]
    return subprocess.run(command, capture_output=True, env=env, timeout=300, check=False)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home whose query encoder is exported and embedding cache warm (model only, no
    folders), copied by each test so that none exports the model again."""
    root = tmp_path_factory.mktemp("seed")
    memes = root / "memes"
    write_memes(memes, CAPTIONS[:2])
    home = root / "home"
    assert cli.main(["add", str(memes), "--home", str(home), "--ocr", "none", "--quiet"]) == 0
    return home


@pytest.fixture
def home(seeded: Path, tmp_path: Path) -> Path:
    new = tmp_path / "home"
    new.mkdir()
    for name in ("query-encoder", "embed-cache"):
        shutil.copytree(seeded / name, new / name)
    return new


def _memes(tmp_path: Path) -> tuple[Path, list[Path]]:
    memes = tmp_path / "memes"
    paths = [p for p, _ in write_memes(memes, CAPTIONS[:3])]
    return memes, paths


# -- point 3: file names as bytes -----------------------------------------------------------------


def test_a_name_that_is_not_utf8_is_indexed_and_given_back_as_its_bytes(
    home: Path, tmp_path: Path
) -> None:
    memes, paths = _memes(tmp_path)
    odd = os.fsencode(memes) + b"/" + LATIN1
    os.rename(os.fsencode(paths[0]), odd)
    added = _cli_bytes("add", str(memes), "--home", str(home), "--ocr", "none", "--quiet")
    assert added.returncode == 0, added.stderr.decode()[-2000:]
    assert b"added " + odd in added.stdout  # printed as the name's own bytes
    again = _cli_bytes("add", "--home", str(home), "--ocr", "none", "--quiet", "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["counts"]["unchanged"] == 3
    found = _cli_bytes("search", "caf meme", "--home", str(home), "--paths", "-0")
    assert found.returncode == 0, found.stderr.decode()[-2000:]
    assert found.stdout.split(b"\0")[0] == odd
    listed = _cli_bytes("search", "caf meme", "--home", str(home), "--json")
    result = json.loads(listed.stdout)["results"][0]
    assert os.fsencode(result["preview"]) == odd and "\ufffd" in result["title"]


def test_a_deleted_file_is_not_printed_before_or_after_add(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    memes, paths = _memes(tmp_path)
    code, _, err = _run(capsys, "add", str(memes), "--home", str(home), "--ocr", "none")
    assert code == 0, err
    code, out, _ = _run(capsys, "search", "meme 01", "--home", str(home), "--paths")
    assert str(paths[1]) in out.splitlines()
    paths[1].unlink()
    code, out, err = _run(capsys, "search", "meme 01", "--home", str(home), "--paths")
    assert str(paths[1]) not in out.splitlines() and "gone from disk" in err
    code, out, err = _run(capsys, "add", "--home", str(home), "--ocr", "none", "--json")
    assert code == 0 and json.loads(out)["removed"] == [str(paths[1])]
    code, out, err = _run(capsys, "search", "meme 01", "--home", str(home), "--paths")
    assert str(paths[1]) not in out.splitlines() and "gone from disk" not in err


# -- point 4: masked files, allow and deny -----------------------------------------------


def test_masked_lists_why_and_the_owner_overrides_it(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    memes, paths = _memes(tmp_path)
    (memes / "meme-00.png.yaml").write_text("title: sexy boromir\n")  # a lexicon hit
    code, out, err = _run(capsys, "add", str(memes), "--home", str(home), "--ocr", "none")
    assert code == 0, err
    rule = (str(paths[0]), "rule lexicon: 'sexy'")
    assert f"masked {rule[0]}: {rule[1]}" in out  # add names what it masked, and why
    target = str(paths[2])
    code, out, err = _run(capsys, "library", "deny", target, "--home", str(home))
    assert code == 0, err
    assert f"masked {target}: denied by you" in out  # the rebuild names the masked file
    code, out, _ = _run(capsys, "library", "masked", "--home", str(home), "--json")
    masked = json.loads(out)
    assert [(m["path"], m["reason"]) for m in masked] == [
        rule,
        (target, "denied by you (mambomeme library deny)"),
    ]
    code, out, _ = _run(capsys, "search", "meme 02", "--home", str(home), "--paths")
    assert target not in out.splitlines()
    code, out, err = _run(capsys, "library", "allow", target, "--home", str(home))
    assert code == 0, err
    code, out, err = _run(capsys, "library", "allow", rule[0], "--home", str(home))
    assert code == 0, err
    code, out, _ = _run(capsys, "library", "masked", "--home", str(home), "--json")
    assert json.loads(out) == []
    code, out, _ = _run(capsys, "search", "meme 02", "--home", str(home), "--paths")
    assert target in out.splitlines()
    code, out, _ = _run(capsys, "search", "boromir", "--home", str(home), "--paths")
    assert out.splitlines()[:1] == [rule[0]]  # allowed over the rule hit
    code, out, _ = _run(capsys, "add", "--home", str(home), "--ocr", "none", "--json")
    assert code == 0 and json.loads(out)["masked"] == []
    code, _, err = _run(capsys, "library", "allow", str(memes / "nope.png"), "--home", str(home))
    assert code == 2 and "not a file of the library" in err


# -- point 5: one writer, whole builds ---------------------------------------------------


def test_a_second_writer_waits_then_gives_up_with_exit_3(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mambomeme.library.lock import writer_lock

    memes, _ = _memes(tmp_path)
    with writer_lock(Library.at(home), 0):
        code, out, err = _run(
            capsys, "add", str(memes), "--home", str(home), "--ocr", "none", "--wait", "0.3"
        )
        assert code == 3 and "another mambomeme command is changing the library" in err
        assert f"pid {os.getpid()}" in err and out == ""
    # a writer that waits long enough runs once the first one has finished
    release = threading.Event()

    def hold() -> None:
        with writer_lock(Library.at(home), 0):
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    threading.Timer(0.5, release.set).start()
    started = time.monotonic()
    code, _, err = _run(capsys, "add", str(memes), "--home", str(home), "--ocr", "none")
    holder.join()
    assert code == 0, err
    assert time.monotonic() - started >= 0.4


def test_a_search_reads_the_build_it_opened_while_add_swaps_in_the_next(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The engine opens the served build, `add` then builds and swaps in a bigger one, and
    the dense route (loaded lazily, after the swap) still reads the build the engine opened:
    no 'ids differ from the corpus (rebuild index_dense)'."""
    from mambomeme.search.engine import Engine
    from mambomeme.serving import serving_target

    memes, _ = _memes(tmp_path)
    assert _run(capsys, "add", str(memes), "--home", str(home), "--ocr", "none")[0] == 0
    target = serving_target(None, home=home)
    engine = Engine.open(target.build, target.params)
    write_memes(tmp_path / "more", CAPTIONS[5:8])
    code, _, err = _run(capsys, "add", str(tmp_path / "more"), "--home", str(home), "--ocr", "none")
    assert code == 0, err
    engine.load("hybrid")
    assert len(engine.items.ids) == 3 and engine.search(["meme 01"], system="hybrid").results
    served = Library.at(home).build_dir
    assert served.is_symlink() and served.resolve() != target.build
    assert len(list((home / "builds").iterdir())) == 2  # the served one and the one before
    assert not (home / "library.new").exists()


def test_a_file_the_model_masks_gives_its_score(home: Path, tmp_path: Path) -> None:
    """The model's reason (this checkout may have no built safety model, so its score is
    given): an item the rules leave safe and the model flags reads `safety model score`."""
    import dataclasses

    import pyarrow.parquet as pq

    from mambomeme.corpus.safety import classifier_from_config
    from mambomeme.corpus.schema import ALL_FIELDS
    from mambomeme.index.integrity import item_from_row
    from mambomeme.library.masking import masked_files

    memes, _ = _memes(tmp_path)
    assert cli.main(["add", str(memes), "--home", str(home), "--ocr", "none", "--quiet"]) == 0
    rows = pq.read_table(home / "library" / "items.parquet").to_pylist()
    items = [item_from_row({k: v for k, v in r.items() if k in ALL_FIELDS}) for r in rows]
    flagged = dataclasses.replace(items[0], safety="unsafe")
    by_id = {str(r["id"]): str(r["preview"]) for r in rows}
    found = masked_files(
        [flagged, *items[1:]], by_id, {}, {flagged.id: 0.9}, 0.5, classifier_from_config({})
    )
    assert found == [
        {
            "path": by_id[flagged.id],
            "id": flagged.id,
            "title": flagged.title,
            "reason": "safety model score 0.900 >= threshold 0.500",
        }
    ]


def test_a_damaged_library_index_says_so_in_library_words_and_add_rebuilds_it(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    memes, _ = _memes(tmp_path)
    assert _run(capsys, "add", str(memes), "--home", str(home), "--ocr", "none")[0] == 0
    ids = home / "library" / "dense" / "dense.ids.json"
    ids.write_text(json.dumps(list(reversed(json.loads(ids.read_text("utf-8"))))), "utf-8")
    code, out, err = _run(capsys, "search", "meme 01", "--home", str(home))
    assert code == 4 and out == "" and "run `mambomeme add` to rebuild it" in err
    assert "dvc" not in err.lower() and "index_dense" not in err
    code, out, err = _run(capsys, "add", "--home", str(home), "--ocr", "none", "--json")
    assert code == 0 and json.loads(out)["build"]["rebuilt"] is True
    assert "does not verify" in err
    code, out, err = _run(capsys, "search", "meme 01", "--home", str(home), "--paths")
    assert code == 0, err
