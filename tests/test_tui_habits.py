"""fzf habits of the TUI (issue 19, item 6), driven headless through the controller.

Keys go through `Controller.feed_keys` (the MainLoop's input filter, then the widgets), one call
per read of the terminal; screens are `render(size).text`. No test sleeps: the worker's results
are awaited by polling, and the live-search debounce is checked with an explicit clock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
import urwid
from PIL import Image

from mambomeme.cli import main
from mambomeme.cli import tui as commands
from mambomeme.search.results import Filters, MatchedField, Result, RouteHit, SearchResponse
from mambomeme.tui import clipboard, keys
from mambomeme.tui.app import PREVIEW_MIN_COLS, Controller, TuiOptions
from mambomeme.tui.feedback import FeedbackLog, Versions

SIZE = (80, 24)
WIDE = (120, 30)


def result(rank: int, title: str, preview: str) -> Result:
    return Result(
        rank=rank,
        item_id=f"id-{title}",
        title=title,
        template="Tmpl",
        kind="meme",
        preview=preview,
        attribution="someone",
        license="CC0-1.0",
        fused_score=1.0 / rank,
        hits=(RouteHit(0, "lexical", rank, 2.0),),
        matched_fields=(MatchedField("ocr_text", f"text of {title} " + "long words " * 30),),
    )


class Search:
    """One result per word of the cues, in order; records (cues, system) of every call."""

    def __init__(self, image: str = "img.png") -> None:
        self.calls: list[tuple[tuple[str, ...], str]] = []
        self.image = image

    def __call__(
        self, cues: Sequence[str], limit: int, filters: Filters, system: str
    ) -> SearchResponse:
        self.calls.append((tuple(cues), system))
        words = [w for c in cues for w in c.split()]
        results = tuple(result(i, w, self.image) for i, w in enumerate(words, 1))
        return SearchResponse(f"req-{len(self.calls)}", system, tuple(cues), results[:limit])


def make(
    tmp_path: Path,
    search: Search | None = None,
    load_dense: Callable[[], None] | None = None,
    **options: object,
) -> Controller:
    Image.new("RGB", (40, 30), (200, 10, 10)).save(tmp_path / "img.png")
    log = FeedbackLog(tmp_path / "events.jsonl", Versions("d", "r", "i"), enabled=False)
    opts = TuiOptions(build_dir=tmp_path, release="fixture", limit=10, **options)  # type: ignore[arg-type]
    c = Controller(search or Search(), opts, log, load_dense=load_dense)
    c.start_threads()
    return c


def lines(c: Controller, size: tuple[int, int] = SIZE) -> list[str]:
    return [row.decode("utf-8").rstrip() for row in c.top.render(size, focus=True).text]


def settle(c: Controller) -> None:
    """Wait for the worker's outcome and apply it."""
    deadline = time.time() + 5
    while not c.has_outcomes():
        assert time.time() < deadline, "the worker delivered nothing"
        time.sleep(0.002)
    c.process_wakeup()


def typed(c: Controller, text: str, size: tuple[int, int] = SIZE) -> None:
    """Type `text` a key at a time, as a person does (one read per key)."""
    for ch in text:
        c.feed_keys([ch], size)


def search_for(c: Controller, text: str) -> None:
    typed(c, text)
    c.feed_keys(["enter"], SIZE)
    settle(c)


def test_first_screen_shows_a_one_line_key_hint(tmp_path: Path) -> None:
    c = make(tmp_path)
    screen = lines(c)
    assert screen[-2] == keys.hint_line() and len(keys.hint_line()) <= 80
    assert "esc quit" in screen[-2] and "? help" in screen[-2]
    c.stop_threads()


def test_q_and_question_mark_act_on_an_empty_query_and_are_typed_otherwise(
    tmp_path: Path,
) -> None:
    c = make(tmp_path)
    c.feed_keys(["?"], SIZE)
    assert c.overlay == "help"
    c.feed_keys(["?"], SIZE)  # closes it again
    assert c.overlay == ""
    typed(c, "aq?")
    assert c.query.edit_text == "aq?" and c.overlay == ""
    c.feed_keys(["ctrl u"], SIZE)
    with pytest.raises(urwid.ExitMainLoop):
        c.feed_keys(["q"], SIZE)
    c.stop_threads()


def test_a_burst_of_typing_starting_with_q_is_text(tmp_path: Path) -> None:
    # type-ahead or a paste arrives as one read: a query may start with q or ?
    c = make(tmp_path)
    c.feed_keys(list("quiet robot"), SIZE)
    assert c.query.edit_text == "quiet robot"
    c.feed_keys(["ctrl u"], SIZE)
    c.feed_keys(list("?x"), SIZE)
    assert c.query.edit_text == "?x" and c.overlay == ""
    c.stop_threads()


@pytest.mark.parametrize("focus", ["query", "results"])
def test_esc_quits_from_the_query_line_and_the_results(tmp_path: Path, focus: str) -> None:
    c = make(tmp_path)
    search_for(c, "one two")
    if focus == "query":
        c.feed_keys(["/"], SIZE)
        typed(c, " more")
    assert c.context() == focus
    with pytest.raises(urwid.ExitMainLoop):
        c.feed_keys(["esc"], SIZE)
    c.stop_threads()


def test_esc_closes_a_dialog_first_and_ctrl_c_quits_even_from_the_help(tmp_path: Path) -> None:
    c = make(tmp_path)
    c.feed_keys(["ctrl f"], SIZE)
    assert c.context() == "filters"
    c.feed_keys(["esc"], SIZE)
    assert c.context() == "empty query"
    c.feed_keys(["f1"], SIZE)
    c.feed_keys(["esc"], SIZE)
    assert c.overlay == ""
    c.feed_keys(["f1"], SIZE)
    with pytest.raises(urwid.ExitMainLoop):
        c.feed_keys(["ctrl c"], SIZE)
    c.stop_threads()


def test_ctrl_n_ctrl_p_move_also_while_typing_and_g_G_jump_in_the_results(
    tmp_path: Path,
) -> None:
    c = make(tmp_path)
    search_for(c, "a b c d")
    assert c.results.selected is not None and c.results.selected.rank == 1
    c.feed_keys(["/"], SIZE)  # back in the query line: ctrl n/p still move, focus stays
    c.feed_keys(["ctrl n"], SIZE)
    c.feed_keys(["ctrl n"], SIZE)
    assert c.results.selected is not None and c.results.selected.rank == 3
    c.feed_keys(["ctrl p"], SIZE)
    assert c.results.selected.rank == 2 and c.context() == "query"
    typed(c, "gG")  # typed into the query, not moves
    assert c.query.edit_text == "a b c dgG" and c.results.selected.rank == 2
    c.feed_keys(["tab"], SIZE)
    c.feed_keys(["G"], SIZE)
    assert c.results.selected.rank == 4
    c.feed_keys(["g"], SIZE)
    assert c.results.selected.rank == 1
    c.feed_keys(["ctrl n"], SIZE)
    assert c.results.selected.rank == 2
    c.feed_keys(["ctrl p"], SIZE)
    assert c.results.selected.rank == 1
    c.stop_threads()


def test_results_found_before_semantic_search_are_rerun_when_it_is_ready(
    tmp_path: Path,
) -> None:
    ready = threading.Event()
    search = Search()
    c = make(tmp_path, search, load_dense=lambda: (ready.wait(5), None)[1])
    search_for(c, "one two")
    c.feed_keys(["ctrl n"], SIZE)  # the user has moved to rank 2
    assert search.calls == [(("one two",), "bm25")] and c.info.semantic == "loading"
    ready.set()
    deadline = time.time() + 5
    while c.worker.dense_state() != "ready":
        assert time.time() < deadline
        time.sleep(0.002)
    c.process_wakeup()  # the dense-ready wakeup: searches again ...
    assert c.info.message == "semantic search ready: searching again with it"
    settle(c)  # ... and shows the new list
    assert search.calls == [(("one two",), "bm25"), (("one two",), "hybrid")]
    assert lines(c)[-1].startswith("#2  2 results")
    assert c.results.selected is not None and c.results.selected.item_id == "id-two"  # kept
    c.stop_threads()


def test_no_rerun_when_the_search_already_used_semantic_search(tmp_path: Path) -> None:
    search = Search()
    c = make(tmp_path, search, load_dense=lambda: None)
    deadline = time.time() + 5
    while c.worker.dense_state() != "ready":
        assert time.time() < deadline
        time.sleep(0.002)
    c.process_wakeup()
    search_for(c, "one")
    assert search.calls == [(("one",), "hybrid")] and c.last_job is not None
    c.process_wakeup()
    assert not c.has_outcomes() and len(search.calls) == 1
    c.stop_threads()


def test_live_search_waits_for_the_debounce_then_searches_once(tmp_path: Path) -> None:
    search = Search()
    c = make(tmp_path, search, live=True, live_debounce_s=0.2)
    start = time.perf_counter()
    typed(c, "one")
    assert c.live_tick(now=start - 1) is False  # typing: nothing searched yet
    assert c.seq == 0
    typed(c, " two")  # each edit pushes the deadline
    due = time.perf_counter() + 0.2
    assert c.live_tick(now=due - 0.1) is False
    assert c.live_tick(now=due + 0.001) is True
    settle(c)
    assert search.calls == [(("one two",), "bm25")]
    assert c.context() == "query"  # still typing
    assert c.live_tick(now=due + 10) is False  # nothing pending, nothing searched again
    typed(c, "x")
    c.feed_keys(["backspace"], SIZE)  # the same query as the last search: not searched again
    assert c.live_tick(now=time.perf_counter() + 1) is False
    typed(c, "z")
    c.feed_keys(["enter"], SIZE)  # Enter searches at once and drops the pending one
    assert c.live_tick(now=time.perf_counter() + 1) is False
    settle(c)
    assert search.calls[-1] == (("one twoz",), "bm25") and len(search.calls) == 2
    c.stop_threads()


def test_without_live_typing_searches_nothing(tmp_path: Path) -> None:
    search = Search()
    c = make(tmp_path, search)
    typed(c, "one")
    assert c.live_tick(now=time.perf_counter() + 10) is False and search.calls == []
    c.stop_threads()


def fake_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "xclip"
    tool.write_text("#!/bin/sh\ncat > /dev/null\n" + script)
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("DISPLAY", ":99")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv(clipboard.ENV_FORCE, raising=False)


def test_copied_is_claimed_when_the_clipboard_tool_succeeded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_tool(tmp_path, monkeypatch, "exit 0\n")
    c = make(tmp_path)
    search_for(c, "one")
    c.feed_keys(["y"], SIZE)
    assert c.info.message == "path copied (xclip)"
    c.stop_threads()


def test_a_failed_copy_is_not_claimed_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_tool(tmp_path, monkeypatch, 'echo "Error: Can\'t open display: :99" >&2\nexit 1\n')
    c = make(tmp_path)
    search_for(c, "one")
    c.feed_keys(["y"], SIZE)  # headless: no terminal to send OSC 52 to either
    message = c.info.message
    assert "copied (" not in message and message.startswith("path NOT copied: ")
    assert "xclip failed (exit 1: Error: Can't open display: :99)" in message
    assert "no terminal for OSC 52" in message
    c.feed_keys(["Y"], SIZE)
    assert c.info.message.startswith("image NOT copied: xclip failed")
    c.stop_threads()


def test_osc52_is_sent_but_never_claimed_as_copied(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv(clipboard.ENV_FORCE, raising=False)
    written: list[str] = []
    copy = clipboard.copy_text("/x/y.png", lambda data: written.append(data) is None)
    assert written == [clipboard.osc52("/x/y.png")]
    assert copy.copied is False and copy.how == "OSC 52"
    described = copy.describe("path")
    assert "unconfirmed" in described and "install wl-copy" in described
    assert "copied" not in described


def test_preview_hides_below_90_columns_and_grows_with_the_terminal(tmp_path: Path) -> None:
    c = make(tmp_path)
    search_for(c, "one")
    narrow = lines(c, (PREVIEW_MIN_COLS - 1, 24))
    assert not c.preview_visible and not any("path: " in line for line in narrow)
    assert narrow[1].startswith(" 1. one · Tmpl")
    lines(c, (PREVIEW_MIN_COLS, 24))
    assert c.preview_visible
    small_rows = c.preview.image_rows
    big = lines(c, (160, 50))
    assert c.preview.image_rows > small_rows

    def image_height(screen: list[str]) -> int:
        return sum(1 for line in screen if "▀" in line)

    assert image_height(big) > image_height(lines(c, (PREVIEW_MIN_COLS, 24)))
    lines(c, (80, 24))  # the terminal shrank
    assert not c.preview_visible
    c.stop_threads()


def image_rows_on(screen: list[str]) -> int:
    return sum(1 for line in screen if "▀" in line)


def test_p_at_80_columns_shows_a_full_screen_preview_and_p_again_the_list(
    tmp_path: Path,
) -> None:
    c = make(tmp_path)
    search_for(c, "one two")
    before = lines(c, SIZE)
    assert before[1].startswith(" 1. one · Tmpl") and image_rows_on(before) == 0
    c.feed_keys(["p"], SIZE)
    screen = lines(c, SIZE)
    assert c.layout.mode == "full" and c.preview_visible
    assert screen[1].startswith("path: ") and screen[1].endswith("img.png")
    assert image_rows_on(screen) >= 10  # most of the 20 body rows: a picture, not a stamp
    assert screen[-2] == keys.hint_line("preview") and "p list" in screen[-2]
    c.feed_keys(["j"], SIZE)  # the list keys still move the selection
    assert c.results.selected is not None and c.results.selected.rank == 2
    assert "two" in "\n".join(lines(c, SIZE))
    c.feed_keys(["p"], SIZE)
    after = lines(c, SIZE)
    assert not c.preview_visible and image_rows_on(after) == 0
    assert after[3].startswith(" 2. two · Tmpl") and after[-2] == keys.hint_line("results")
    c.stop_threads()


class Picky(Search):
    """No result for a cue with "zilch"; a RuntimeError for one with "boom"."""

    def __call__(
        self, cues: Sequence[str], limit: int, filters: Filters, system: str
    ) -> SearchResponse:
        if any("boom" in cue for cue in cues):
            raise RuntimeError("index unavailable")
        if any("zilch" in cue for cue in cues):
            self.calls.append((tuple(cues), system))
            return SearchResponse("req-none", system, tuple(cues), ())
        return super().__call__(cues, limit, filters, system)


@pytest.mark.parametrize("query", ["zilch", "boom"])
def test_no_results_or_an_error_leave_the_focus_on_the_query_so_typing_never_quits(
    tmp_path: Path, query: str
) -> None:
    c = make(tmp_path, Picky())
    search_for(c, query)
    assert c.frame.focus_position == "header" and c.context() == keys.QUERY
    typed(c, "aqua")  # q once quit the app here, o opened a viewer, t changed the filter
    assert c.query.edit_text == f"{query}aqua" and c.filters == Filters()
    screen = lines(c)
    assert screen[0] == f"query> {query}aqua"
    if query == "boom":  # the error stays on the message line until the next search
        assert screen[-2] == "error: RuntimeError: index unavailable"
    else:
        assert screen[-2] == keys.hint_line("query") and "tab results" not in screen[-2]
    assert c.info.hint == keys.hint_line("query")
    c.feed_keys(["tab"], SIZE)  # nothing to browse: the focus stays, and the UI says why
    assert c.frame.focus_position == "header"
    assert c.info.message == "no results to browse: type a query and press enter"
    c.stop_threads()


def test_a_letter_typed_in_the_results_goes_to_the_query_line(tmp_path: Path) -> None:
    c = make(tmp_path, Picky())
    search_for(c, "one two")
    assert c.context() == keys.RESULTS and lines(c)[-2] == keys.hint_line("results")
    typed(c, " qua")  # space and q are not bound in the list: typed, never quit
    assert c.context() == keys.QUERY and c.query.edit_text == "one two qua"
    assert lines(c)[-2] == keys.hint_line("query+results")
    c.feed_keys(["enter"], SIZE)
    settle(c)
    assert c.context() == keys.RESULTS and c.results.selected is not None
    c.feed_keys(["j"], SIZE)  # the list's own letters still act there
    assert c.results.selected.rank == 2 and c.query.edit_text == "one two qua"
    c.stop_threads()


def test_results_arriving_while_the_query_is_edited_leave_the_focus_there(
    tmp_path: Path,
) -> None:
    c = make(tmp_path)
    typed(c, "one")
    c.feed_keys(["enter"], SIZE)
    typed(c, " two")  # typed before the results of "one" arrived
    settle(c)
    assert c.context() == keys.QUERY and c.query.edit_text == "one two"
    c.stop_threads()


def test_semantic_ready_keeps_the_first_screen_key_hint(tmp_path: Path) -> None:
    c = make(tmp_path, load_dense=lambda: None)
    deadline = time.time() + 5
    while c.worker.dense_state() != "ready":
        assert time.time() < deadline
        time.sleep(0.002)
    c.process_wakeup()
    screen = lines(c)
    assert screen[-2] == keys.hint_line("first") and "sem:ready" in screen[-1]
    c.stop_threads()


def test_details_show_the_path_first_and_scroll(tmp_path: Path) -> None:
    c = make(tmp_path)
    search_for(c, "one")
    screen = lines(c, WIDE)
    col = screen[1].find("path: ")  # the pane's first row: the path
    assert col > 40
    pane = [line[col:] for line in screen[1:-2]]
    assert str(tmp_path) in "".join(pane[:3]).replace(" ", "")
    c.feed_keys(["J"], WIDE)
    c.feed_keys(["J"], WIDE)  # past the path and the image
    pane = [line[col:] for line in lines(c, WIDE)[1:-2]]
    assert pane[0].startswith("one") and not any("path: " in line for line in pane)
    c.feed_keys(["K"], WIDE)
    c.feed_keys(["K"], WIDE)
    c.feed_keys(["K"], WIDE)  # clamped at the top
    assert lines(c, WIDE)[1][col:].startswith("path: ")
    c.stop_threads()


def test_help_fits_and_scrolls_at_80x24(tmp_path: Path) -> None:
    c = make(tmp_path)
    c.feed_keys(["f1"], SIZE)
    first = lines(c)
    assert "┌" in first[0] and first[0].rstrip().endswith("┐")  # the whole box on screen
    assert "└" in first[-2] and first[-2].rstrip().endswith("┘")
    assert "anywhere:" in "\n".join(first)
    assert "close the help" not in "\n".join(first)
    for _ in range(10):
        c.feed_keys([" "], SIZE)  # page down, clamped at the last page
    end = "\n".join(lines(c))
    assert "close the help (any other key too)" in end and "anywhere:" not in end
    c.feed_keys(["k"], SIZE)
    assert c.help is not None and c.help.offset > 0
    c.feed_keys(["page up"], SIZE)
    c.feed_keys(["page up"], SIZE)
    c.feed_keys(["page up"], SIZE)
    assert "anywhere:" in "\n".join(lines(c)) and c.help.offset == 0
    # every binding's help text is on some page (wrapped text joined again)
    seen: list[str] = []
    for _ in range(len(keys.BINDINGS) + 10):  # a row at a time to the end
        seen.extend(lines(c))
        c.feed_keys(["j"], SIZE)
    assert c.help.offset == c.help.last_offset() > 0
    flat = " ".join(" ".join(line.strip("│ ").split()) for line in seen)
    for binding in keys.BINDINGS:
        assert all(word in flat for word in binding.help.split()), binding.help
    c.feed_keys(["x"], SIZE)  # any other key closes it
    assert c.overlay == ""
    c.stop_threads()


def test_query_option_searches_at_start(tmp_path: Path) -> None:
    search = Search()
    c = make(tmp_path, search, query="one two")
    settle(c)
    assert search.calls == [(("one two",), "bm25")] and c.context() == "results"
    assert lines(c)[0].startswith("query> one two")
    c.stop_threads()


@pytest.mark.parametrize(
    ("argv", "print_choice", "query"),
    [
        ([], False, ""),
        (["--print-choice"], True, ""),
        (["--query", "john cena"], False, "john cena"),
        (["--print-choice", "-q", "cat", "--live"], True, "cat"),
        (["tui", "--query", "x"], False, "x"),
    ],
)
def test_bare_command_takes_the_tui_options(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], print_choice: bool, query: str
) -> None:
    seen = []
    monkeypatch.setattr(commands, "run_tui", lambda args: seen.append(args) or 0)
    assert main(argv) == 0
    assert len(seen) == 1
    assert seen[0].print_choice is print_choice and seen[0].query == query


def test_the_filter_dialog_takes_a_kind_in_any_case(tmp_path: Path) -> None:
    c = make(tmp_path)
    search_for(c, "one")
    c.feed_keys(["f"], SIZE)
    typed(c, "MEME")
    c.feed_keys(["enter"], SIZE)
    assert c.overlay == "" and c.filters.kind == "meme" and not c.info.error
    c.stop_threads()
