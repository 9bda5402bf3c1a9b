"""Hostile input: every bad argument, file, line or field is a typed error naming it, with the
command's documented exit code; JSON output is always valid UTF-8."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mambomeme import cli
from mambomeme.cli import search as cli_search
from mambomeme.corpus.ingest import ingest, validate_all
from mambomeme.corpus.sources import fixture as fixture_source
from mambomeme.errors import BenchmarkError, BoundError, MamboMemeError
from mambomeme.evaluation import annotations as sheets
from mambomeme.evaluation import judgement_sets as js
from mambomeme.search.results import Filters
from mambomeme.tui import keys
from mambomeme.tui.app import TuiOptions
from mambomeme.tui.feedback import FeedbackLog, Versions

ROOT = Path(__file__).resolve().parents[1]
PARAMS = str(ROOT / "params.yaml")
SURROGATE = "caf\udce9"  # what Python makes of the Latin-1 bytes b"caf\xe9" in argv


# -- engine.search -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "bound"),
    [
        ({"filters": Filters(language=SURROGATE)}, "filter.language"),
        ({"filters": Filters(language="\ud800")}, "filter.language"),
        ({"filters": Filters(template="cat\udcff")}, "filter.template"),
        ({"filters": Filters(language="")}, "filter.language"),
        ({"filters": Filters(template="  ")}, "filter.template"),
        ({"filters": Filters(kind="")}, "filter.kind"),
        ({"filters": "en"}, "filters"),
        ({"system": None}, "system"),
        ({"system": 3}, "system"),
        ({"cues": [SURROGATE]}, "cues"),
    ],
)
def test_search_refuses_hostile_arguments_with_a_bound_error(
    lexical_engine: Any, kwargs: dict[str, Any], bound: str
) -> None:
    request: dict[str, Any] = {"cues": ["john cena"], "system": "bm25", **kwargs}
    with pytest.raises(BoundError) as refused:
        lexical_engine.search(**request)
    assert refused.value.bound == bound


def test_filters_that_exclude_everything_say_so(lexical_engine: Any) -> None:
    response = lexical_engine.search(["john cena"], filters=Filters(language="xx"), system="bm25")
    assert response.results == ()
    assert response.empty_reason == "the filters leave no eligible item"
    with pytest.raises(MamboMemeError, match="unknown system"):
        lexical_engine.search(["john cena"], filters=Filters(language="xx"), system="nope")


# -- the search command -----------------------------------------------------------------------


def _search(fixture_build: Path, *extra: str) -> list[str]:
    return ["search", "john cena", "--build", str(fixture_build), "--params", PARAMS, *extra]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--language", ""], "argument --language: must not be empty"),
        (["--language", " "], "argument --language: must not be empty"),
        (["--template", ""], "argument --template: must not be empty"),
        (["--kind", ""], "argument --kind: invalid choice"),
        (["--language", SURROGATE], "argument --language: not valid UTF-8"),
        (["--cue", SURROGATE], "argument --cue: not valid UTF-8"),
        (["--system", "nope"], "unknown system 'nope'"),
    ],
)
def test_search_command_refuses_bad_arguments_with_exit_2(
    fixture_build: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    try:
        code = cli.main(_search(fixture_build, *extra))
    except SystemExit as exc:  # argparse
        code = int(exc.code or 0)
    assert code == 2
    assert message in capsys.readouterr().err


def test_a_build_path_that_is_not_utf8_is_refused(
    fixture_build: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link = Path(os.fsdecode(bytes(tmp_path) + b"/build-\xe9"))  # a --build path in Latin-1
    link.symlink_to(fixture_build)
    assert cli.main(["search", "john cena", "--build", str(link), "--params", PARAMS]) == 2
    assert "path is not valid UTF-8" in capsys.readouterr().err


def test_emit_writes_valid_utf8_whatever_the_text(
    capfdbinary: pytest.CaptureFixture[bytes],
) -> None:
    cli_search.emit(json.dumps({"release": "b\udcff", "title": "caf\u00e9"}, ensure_ascii=False))
    out = capfdbinary.readouterr().out
    assert json.loads(out.decode("utf-8")) == {"release": "b\udcff", "title": "caf\u00e9"}


def test_search_with_pythonioencoding_utf8(fixture_build: Path) -> None:
    """A query of invalid bytes is refused before anything is printed; --json stays UTF-8."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    command = [sys.executable, "-m", "mambomeme.cli"]
    bad = [*command, "search", os.fsdecode(b"caf\xe9"), "--build", str(fixture_build), "--json"]
    done = subprocess.run(bad, capture_output=True, env=env, timeout=120, check=False)
    assert done.returncode == 2 and b"not valid UTF-8" in done.stderr
    assert done.stdout == b""
    good = [*command, *_search(fixture_build, "--json", "--system", "bm25")]
    done = subprocess.run(good, capture_output=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    assert json.loads(done.stdout.decode("utf-8"))["results"]


# -- TUI ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("viewer", [(), (" ",), ("",)])
def test_a_blank_viewer_is_refused(tmp_path: Path, viewer: tuple[str, ...]) -> None:
    with pytest.raises(MamboMemeError, match="--viewer: the image viewer command is blank"):
        TuiOptions(build_dir=tmp_path, release="r", viewer=viewer)


def test_tui_with_a_blank_viewer_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["tui", "--fake-engine", "--build", str(tmp_path / "b"), "--viewer", " "]
    assert cli.main([*argv, "--feedback-file", str(tmp_path / "events.jsonl")]) == 2
    assert "--viewer" in capsys.readouterr().err


def test_tui_with_an_unbalanced_viewer_quote_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["tui", "--fake-engine", "--build", str(tmp_path / "b"), "--viewer", "feh 'x"]
    assert cli.main([*argv, "--feedback-file", str(tmp_path / "events.jsonl")]) == 2
    assert "--viewer: cannot split" in capsys.readouterr().err


def test_a_corrupt_events_file_does_not_stop_the_start(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    good = json.dumps({"time_utc": "2999-01-01T00:00:00+00:00", "action": "open"})
    path.write_bytes(b"\xff\xfe not utf-8\n" + good.encode() + b"\n[[[[\n")
    log = FeedbackLog(path, Versions("d", "r", "i"), enabled=False)
    assert log.prune() == 2  # the two unreadable lines, the dated one is kept
    assert path.read_text("utf-8") == good + "\n"


def test_no_typed_letter_toggles_feedback() -> None:
    for binding in keys.BINDINGS:
        if binding.action == "toggle_feedback":
            assert all(len(k) > 1 for k in binding.keys), binding
    assert keys.action_for(keys.RESULTS, "F") is None
    assert keys.action_for(keys.RESULTS, "ctrl o") == "toggle_feedback"


# -- annotator files ------------------------------------------------------------------------


def _sheet(path: Path, note: str) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["qid", "item_id", "grade", "safety", "note"])
        writer.writerow(["fx-entity-02", "fx:tpl-disaster-girl", "3", "safe", note])
    return path


def test_a_csv_field_over_128_kib_is_a_benchmark_error(tmp_path: Path) -> None:
    sheet = _sheet(tmp_path / "a.csv", "x" * (200 * 1024))
    with pytest.raises(BenchmarkError, match=rf"{sheet}:\d+: malformed CSV row: field larger"):
        sheets.read_labels(sheet)


def test_import_annotations_with_a_huge_field_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pool = tmp_path / "pool"
    (pool / "annotator-a").mkdir(parents=True)
    pairs = {"pairs": [["fx-entity-02", "fx:tpl-disaster-girl"]]}
    (pool / "annotator-a" / "assignment.json").write_text(json.dumps(pairs))
    sheet = _sheet(tmp_path / "a.csv", "x" * (200 * 1024))
    argv = ["import-annotations", str(sheet), "--pool", str(pool), "--annotator", "annotator-a"]
    assert cli.main([*argv, "--check"]) == 2
    assert f"{sheet}:2: malformed CSV row" in capsys.readouterr().err


def _set_files(inputs: dict[str, str]) -> Any:
    def make(name: str) -> dict[str, str]:
        manifest = {"judgement_set": name, "inputs": inputs, "files": {"qrels.txt": "x"}}
        return {"qrels.txt": "q1 0 fx:1 2\n", "manifest.json": json.dumps(manifest, indent=2)}

    return make


def test_a_judgement_set_version_depends_on_content_not_path(tmp_path: Path) -> None:
    sets = tmp_path / "sets"
    first, created = js.freeze_version(sets, "b", _set_files({"judgements/annotator-a.csv": "1"}))
    assert created and first.name == "b-j1"
    elsewhere = _set_files({"/tmp/copy/of/annotator-a.csv": "1"})
    assert js.freeze_version(sets, "b", elsewhere) == (first, False)
    changed = _set_files({"/tmp/copy/of/annotator-a.csv": "2"})
    assert js.freeze_version(sets, "b", changed)[0].name == "b-j2"


# -- ingest ------------------------------------------------------------------------------------


def _record(**changes: Any) -> dict[str, Any]:
    line = (ROOT / "fixture" / "items.jsonl").read_text("utf-8").splitlines()[0]
    return {**json.loads(line), **changes}


def test_hostile_records_are_rejects_naming_file_line_and_field(tmp_path: Path) -> None:
    image = tmp_path / "real.png"
    image.write_bytes(b"\x89PNG\r\n")
    lines = [
        json.dumps(_record(id="fx:ok-1", preview="previews/ok-1.png")),
        "[" * 100_000,
        '{"id": "fx:dup-1", "id": "fx:dup-2"}',
        json.dumps(_record(id="fx:up", preview="../outside.png")),
        json.dumps(_record(id="fx:jpg", preview="previews/x.jpg")),
        json.dumps(_record(id="fx:shared", preview="previews/ok-1.png")),
        json.dumps(_record(id="fx:empty", preview="")),
        json.dumps(_record(id="fx:blank", preview=" ")),
        json.dumps(_record(id="fx:passwd", preview="/etc/passwd")),
        json.dumps(_record(id="fx:missing", preview=str(tmp_path / "missing.png"))),
        json.dumps(_record(id="fx:abs", preview=str(image))),
    ]
    source = tmp_path / "items.jsonl"
    source.write_text("\n".join(lines) + "\n", "utf-8")
    items, rejects, count = validate_all(fixture_source.read_records({"path": str(source)}))
    assert count == len(lines) and len(items) + len(rejects) == count
    assert sorted(i.id for i in items) == ["fx:abs", "fx:ok-1"]
    expected = [
        "items.jsonl:2:<record>:invalid JSON: nested too deeply",
        "items.jsonl:3:<record>:invalid JSON: duplicate key 'id'",
        "items.jsonl:4:preview:path escapes the build directory",
        "items.jsonl:5:preview:generated previews must be .png",
        "items.jsonl:6:preview:same preview file as items.jsonl:1",
        "items.jsonl:7:<record>:field preview: empty path",
        "items.jsonl:8:preview:blank or padded preview path",
        "items.jsonl:9:preview:not an image file name: '/etc/passwd'",
        "items.jsonl:10:preview:image file does not exist",
    ]
    assert len(rejects) == len(expected)
    for reject, start in zip(rejects, expected, strict=True):
        assert reject.startswith(start), (reject, start)


def test_a_lenient_ingest_counts_bad_previews_as_rejects(tmp_path: Path) -> None:
    lines = [
        json.dumps(_record(id="fx:a", preview="previews/a.png")),
        json.dumps(_record(id="fx:b", preview="previews/a.png")),
        json.dumps(_record(id="fx:c", preview="previews/../../c.png")),
    ]
    source = tmp_path / "items.jsonl"
    source.write_text("\n".join(lines) + "\n", "utf-8")
    build = tmp_path / "build"
    build.mkdir()
    result = ingest("t", {"source": "fixture", "path": str(source)}, build, build / "m.json", False)
    assert [i.id for i in result.items] == ["fx:a"]
    assert [r.split(":preview:")[0] for r in result.rejects] == ["items.jsonl:2", "items.jsonl:3"]
    assert result.manifest["counts"]["rejected"] == 2
    assert (build / "previews" / "a.png").is_file()
