"""Canvas tests: widgets rendered with `render(size).text` after keypresses, as urwid does."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from PIL import Image
from urwid.util import LayeredAttr

from mambomeme.search.cues import parse_cues
from mambomeme.search.results import Filters, MatchedField, Result, RouteHit, SearchResponse
from mambomeme.tui import keys, widgets
from mambomeme.tui.app import Controller, TuiOptions, no_match_text
from mambomeme.tui.feedback import FeedbackLog, Versions
from mambomeme.tui.widgets import PreviewPane, ResultsList, StatusBar, StatusInfo

SIZE = (80, 24)


def result(rank: int, title: str, snippet: str = "", preview: str = "previews/x.png") -> Result:
    return Result(
        rank=rank,
        item_id=f"id-{rank}",
        title=title,
        template="Tmpl",
        kind="meme",
        preview=preview,
        attribution="someone",
        license="CC0-1.0",
        fused_score=1.0 / rank,
        hits=(RouteHit(0, "lexical", rank, 2.0), RouteHit(0, "dense", rank, 0.5)),
        matched_fields=(MatchedField("ocr_text", snippet or f"text of {title}"),),
    )


def texts(canvas) -> list[str]:  # type: ignore[no-untyped-def]
    return [row.decode("utf-8").rstrip() for row in canvas.text]


def attrs_of(canvas, row: int, word: str) -> set[object]:  # type: ignore[no-untyped-def]
    """The attributes with which `word` is drawn on `row` of the canvas."""
    found: set[object] = set()
    for attr, _cs, text in list(canvas.content())[row]:
        if word.encode() in text:
            found.update(attr.layers if isinstance(attr, LayeredAttr) else (attr,))
    return found


def test_results_list_shows_rank_title_template_and_highlighted_snippet() -> None:
    rows = ResultsList()
    rows.set_results(
        [result(1, "John Cena entrance", "and his name is John Cena"), result(2, "Other")],
        ["john cena"],
    )
    canvas = rows.render((60, 4), focus=True)
    lines = texts(canvas)
    assert lines[0] == " 1. John Cena entrance · Tmpl"
    assert lines[1] == "    ocr_text: and his name is John Cena"
    assert lines[2] == " 2. Other · Tmpl"
    assert "match" in attrs_of(canvas, 1, "Cena")
    assert "match" not in attrs_of(canvas, 1, "name")


def test_results_list_selection_moves_and_is_highlighted() -> None:
    rows = ResultsList()
    rows.set_results([result(1, "One"), result(2, "Two"), result(3, "Three")], ["x"])
    assert rows.selected is not None and rows.selected.rank == 1
    rows.move(1)
    assert rows.selected is not None and rows.selected.rank == 2
    canvas = rows.render((40, 6), focus=False)  # highlighted even without focus
    assert "selected" in attrs_of(canvas, 2, "Two")
    assert "selected" not in attrs_of(canvas, 0, "One")
    rows.move(10)
    assert rows.selected is not None and rows.selected.rank == 3


def test_status_bar_fields_fit_80_columns() -> None:
    bar = StatusBar()
    info = StatusInfo(
        seq=7,
        count=10,
        ms=42.4,
        routes=("dense", "lexical", "typo"),
        release="fixture",
        semantic="ready",
        feedback=False,
    )
    bar.update(info)
    lines = texts(bar.render((80,)))
    assert lines[1] == "#7  10 results  42 ms  dense+lex+typo  fixture  sem:ready  safe:on  fb:off"
    info.error = "BoundError: max_cues: 9 cues"
    bar.update(info)
    assert texts(bar.render((80,)))[0] == "error: BoundError: max_cues: 9 cues"


def test_preview_pane_metadata_and_mono_image(tmp_path: Path) -> None:
    image = tmp_path / "img.png"
    Image.new("RGB", (20, 10), (255, 255, 255)).save(image)
    pane = PreviewPane(colour_mode="mono", image_rows=3)
    pane.show(result(1, "John Cena entrance"), None, image)
    lines = texts(pane.render((30, 30)))
    assert lines[0].startswith("path: ")  # the path first (wrapped over as many rows as needed)
    first = lines.index("@" * 12)
    # 20x10 pixels in at most 30 cols x 3 rows (6 pixel rows): scale 0.6 -> 12 x 3 cells
    assert lines[first : first + 3] == ["@" * 12] * 3  # white -> the densest ramp character
    assert "".join(lines[:first]) == f"path: {image}"
    joined = "\n".join(lines)
    assert "licence: CC0-1.0" in joined and "attribution: someone" in joined
    assert "routes: dense+lexical" in joined


def test_preview_pane_colour_image_uses_half_blocks(tmp_path: Path) -> None:
    image = tmp_path / "img.png"
    Image.new("RGB", (8, 8), (255, 0, 0)).save(image)
    pane = PreviewPane(colour_mode="256", image_rows=2)
    pane.show(result(1, "Red"), None, image)
    assert "▀▀▀▀" in texts(pane.render((4, 40)))


def test_preview_pane_unreadable_image_says_so(tmp_path: Path) -> None:
    pane = PreviewPane(colour_mode="256", image_rows=2)
    pane.show(result(1, "Gone"), None, tmp_path / "missing.png")
    assert any(line.startswith("[no image: ") for line in texts(pane.render((40, 8))))


def test_parse_cues_and_no_match_text() -> None:
    assert parse_cues(" a |  | b c ") == ("a", "b c")
    text = no_match_text(("zzz",), Filters(kind="meme"), "loading")
    assert text.startswith("no confident match for 'zzz'")
    assert "clearing the filters" in text and "semantic search is ready" in text


def test_highlight_keeps_all_text() -> None:
    markup = widgets.highlight("Hello, World!", frozenset({"world"}))
    assert "".join(t for _, t in markup) == "Hello, World!"
    assert ("match", "World") in markup


# ----- the controller with an injected search function ----------------------------------------


class FakeSearch:
    """Returns one result per word; a query containing 'slow' waits for `release`."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls: list[tuple[tuple[str, ...], str]] = []

    def __call__(
        self, cues: Sequence[str], limit: int, filters: Filters, system: str
    ) -> SearchResponse:
        self.calls.append((tuple(cues), system))
        if any("slow" in c for c in cues):
            self.release.wait(5)
        if any("boom" in c for c in cues):
            raise RuntimeError("index unavailable")
        words = [w for c in cues for w in c.split() if w != "none"]
        results = tuple(result(i, f"{w} title", f"about {w}") for i, w in enumerate(words, 1))
        return SearchResponse("req-" + "-".join(words), system, tuple(cues), results[:limit])


def controller(tmp_path: Path, search: FakeSearch) -> Controller:
    log = FeedbackLog(tmp_path / "events.jsonl", Versions("d", "r", "i"), enabled=False)
    options = TuiOptions(build_dir=tmp_path, release="fixture", limit=10)
    c = Controller(search, options, log)
    c.start_threads()
    return c


def wait_apply(c: Controller) -> None:
    deadline = time.time() + 5
    while not c.has_outcomes():
        assert time.time() < deadline, "the worker delivered nothing"
        time.sleep(0.005)
    c.process_wakeup()


def type_query(c: Controller, text: str) -> None:
    if c.context() == "results":
        c.top.keypress(SIZE, "/")
    c.top.keypress(SIZE, "ctrl u")
    for ch in text:
        c.top.keypress(SIZE, ch)
    c.top.keypress(SIZE, "enter")


def screen_text(c: Controller) -> list[str]:
    return texts(c.top.render(SIZE, focus=True))


def test_controller_submit_renders_list_and_status(tmp_path: Path) -> None:
    search = FakeSearch()
    c = controller(tmp_path, search)
    type_query(c, "john cena")
    assert screen_text(c)[-1].startswith("#1  searching")
    wait_apply(c)
    lines = screen_text(c)
    assert lines[0].startswith("query> john cena")
    assert lines[1].startswith(" 1. john title · Tmpl")
    assert lines[3].startswith(" 2. cena title · Tmpl")
    assert lines[-1].startswith("#1  2 results  ")
    assert "dense+lex" in lines[-1]
    assert search.calls == [(("john cena",), "bm25")]  # semantic is off without a dense loader
    c.top.keypress(SIZE, "j")
    assert c.results.selected is not None and c.results.selected.rank == 2
    c.stop_threads()


def test_controller_newer_submit_supersedes_older(tmp_path: Path) -> None:
    search = FakeSearch()
    c = controller(tmp_path, search)
    type_query(c, "slow one")
    time.sleep(0.05)  # the worker is now inside the slow search
    type_query(c, "fast")
    search.release.set()
    deadline = time.time() + 5
    applied = []
    while c.info.busy:  # the slow outcome arrives first and is dropped as stale
        assert time.time() < deadline
        if c.has_outcomes():
            c.process_wakeup()
            applied.append(c.info.busy)
        time.sleep(0.005)
    assert [cues for cues, _ in search.calls] == [("slow one",), ("fast",)]
    lines = screen_text(c)
    assert lines[1].startswith(" 1. fast title")
    assert lines[-1].startswith("#2  1 result  ")
    c.stop_threads()


def test_controller_search_error_shows_in_status_and_ui_keeps_working(tmp_path: Path) -> None:
    c = controller(tmp_path, FakeSearch())
    type_query(c, "boom")
    wait_apply(c)
    lines = screen_text(c)
    assert lines[-2] == "error: RuntimeError: index unavailable"
    type_query(c, "again")
    wait_apply(c)
    lines = screen_text(c)
    assert lines[1].startswith(" 1. again title")
    assert lines[-2] == keys.hint_line("results")  # the error is gone; the key hint is back
    c.stop_threads()


def test_controller_empty_result_says_no_confident_match(tmp_path: Path) -> None:
    c = controller(tmp_path, FakeSearch())
    type_query(c, "none")
    wait_apply(c)
    lines = screen_text(c)
    assert lines[1].startswith("no confident match for 'none'")
    assert lines[-1].startswith("#1  0 results")
    c.stop_threads()


def test_controller_kind_filter_cycles_and_resubmits(tmp_path: Path) -> None:
    search = FakeSearch()
    c = controller(tmp_path, search)
    type_query(c, "cat")
    wait_apply(c)
    c.top.keypress(SIZE, "t")
    assert c.filters == Filters(kind="template")
    wait_apply(c)
    assert screen_text(c)[-1].endswith("kind=template")
    c.top.keypress(SIZE, "f")  # the filter dialog
    assert c.context() == "filters"
    for _ in range(len("template")):
        c.top.keypress((80, 24), "backspace")
    for ch in "meme":
        c.top.keypress(SIZE, ch)
    c.top.keypress(SIZE, "enter")
    assert c.context() == "results" and c.filters.kind == "meme"
    c.stop_threads()


def test_help_screen_lists_every_binding(tmp_path: Path) -> None:
    c = controller(tmp_path, FakeSearch())
    c.top.keypress(SIZE, "f1")
    text = "\n".join(texts(c.top.render((100, 40), focus=True)))
    assert "copy the image path to the clipboard" in text and "quit" in text
    c.top.keypress(SIZE, "x")  # any key closes it
    assert c.overlay == ""
    c.stop_threads()


@pytest.mark.parametrize("key", ["p"])
def test_toggle_preview_changes_layout(tmp_path: Path, key: str) -> None:
    wide = (120, 30)  # the preview shows from 90 columns
    c = controller(tmp_path, FakeSearch())
    type_query(c, "one")
    wait_apply(c)
    assert "path: " in "\n".join(texts(c.top.render(wide, focus=True)))
    assert c.preview_visible
    c.top.keypress(wide, key)
    assert not c.preview_visible
    lines = texts(c.top.render(wide, focus=True))
    assert lines[1].startswith(" 1. one title · Tmpl") and "path: " not in "\n".join(lines)
    c.stop_threads()


def test_controller_records_preview_copy_choose_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    monkeypatch.setenv("MAMBOMEME_CLIPBOARD", "osc52")
    path = tmp_path / "events.jsonl"
    log = FeedbackLog(path, Versions("d", "r", "i"), enabled=True)
    c = Controller(FakeSearch(), TuiOptions(build_dir=tmp_path, release="fixture"), log)
    c.start_threads()
    type_query(c, "alpha beta gamma")
    wait_apply(c)
    wide = (120, 30)  # a preview is recorded only where the pane shows (90+ columns)
    c.top.render(wide, focus=True)  # drawn before the user moves
    c.top.keypress(wide, "j")  # a user preview of rank 2
    c.top.keypress(wide, "k")  # and of rank 1
    c.top.keypress(wide, "j")  # rank 2 again: already previewed, not recorded twice
    c.top.keypress(wide, "y")
    c.top.keypress(wide, "enter")
    c.stop_threads()
    events = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(e["action"], e["target_rank"]) for e in events] == [
        ("preview", 2),
        ("preview", 1),
        ("copy", 2),
        ("choose", 2),
    ]
    assert events[0]["shown"] == [{"id": f"id-{i}", "rank": i} for i in (1, 2, 3)]
    assert all(e["request_id"] == "req-alpha-beta-gamma" for e in events)
    assert [e["action"] for e in events].count("choose") == 1
