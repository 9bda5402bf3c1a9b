"""The TUI controller: owns the urwid MainLoop, the search worker thread and the terminal's life.

- Widgets get records, never the engine: the controller is built on an injected `search`
  callable, an optional `load_dense` callable (run in a background thread; the lexical
  QUICK_SYSTEM is searched until it finishes) and an `item_lookup` for the preview's metadata.
- Searches run on one worker thread. Each submit gets a sequence number; a newer submit replaces
  a job not yet started, and a result whose sequence number is not the latest is dropped. The
  worker wakes the main loop through `loop.watch_pipe`; the controller then redraws explicitly.
- Submit-to-render (ms) runs from the moment the submit key is accepted until `draw_screen` has
  drawn the status and the complete list; with a timing file each request appends one JSON line.
- The terminal is restored on every exit path: urwid stops the screen on exceptions, `run` adds a
  try/finally, SIGINT/SIGTERM/SIGHUP end the loop through the wakeup pipe, and external viewers
  run inside `paused_screen`.
- Keys typed before the first draw reach the loop (`run(type_ahead=...)`, see terminal.py). On
  an empty query `q` and `?` act; a burst of several printable keys in one read (type-ahead, a
  paste) is typing, so a query may still start with q.
- Results found before semantic search was ready are searched again, with the same cues and
  filters, when it becomes ready. With `live`, a query is searched LIVE_DEBOUNCE_S after the last
  edit (a documented constant). params.yaml's `tui` section holds only `graphics` (how previews
  are drawn: graphics.py), which `mambomeme tui --graphics` overrides.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, TextIO

import urwid

from mambomeme.corpus.schema import KINDS, Item
from mambomeme.errors import MamboMemeError
from mambomeme.search.cues import parse_cues
from mambomeme.search.results import Filters, Result, SearchResponse
from mambomeme.search.systems import DEFAULT_SYSTEM, QUICK_SYSTEM
from mambomeme.tui import clipboard, graphics, keys, preview
from mambomeme.tui.feedback import FeedbackLog
from mambomeme.tui.terminal import HeldInput
from mambomeme.tui.widgets import (
    PALETTE,
    FilterDialog,
    HelpView,
    PreviewLayout,
    PreviewPane,
    QueryEdit,
    ResultsList,
    StatusBar,
    StatusInfo,
)
from mambomeme.tui.worker import Job, Outcome, SearchFn, SearchWorker

if TYPE_CHECKING:
    from mambomeme.tui.backend import LazyEngine

ItemLookup = Callable[[str], "Item | None"]
ENV_TEST_RAISE = "MAMBOMEME_TUI_TEST_RAISE"  # test hook: an action whose handler raises
EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}
_KIND_CYCLE: tuple[str | None, ...] = (None, *KINDS)
LIVE_DEBOUNCE_S = 0.15  # --live: search this long after the last edit of the query
PREVIEW_MIN_COLS = 90  # narrower: no pane beside the list (it needs the width); p: full screen
FULL_PREVIEW_TEXT_ROWS = 4  # the full-screen preview keeps this many rows for the path and text


@dataclass(frozen=True)
class TuiOptions:
    build_dir: Path
    release: str
    limit: int = 20
    system: str = DEFAULT_SYSTEM  # used once semantic search is ready; QUICK_SYSTEM until then
    print_choice: bool = False
    viewer: tuple[str, ...] = ("xdg-open",)
    timing_file: Path | None = None
    show_preview: bool = True
    raise_in: str = ""
    query: str = ""  # searched at start (--query)
    live: bool = False  # search as you type (--live)
    live_debounce_s: float = LIVE_DEBOUNCE_S
    graphics: str = "blocks"  # kitty, iterm2 or blocks (graphics.choose: --graphics, params)

    def __post_init__(self) -> None:
        if self.graphics not in graphics.PROTOCOLS:
            raise graphics.GraphicsError(
                f"graphics: expected one of {', '.join(graphics.PROTOCOLS)}, got {self.graphics!r}"
            )
        if not self.viewer or not self.viewer[0].strip():
            raise MamboMemeError(
                f"--viewer: the image viewer command is blank ({self.viewer!r}); give a program "
                "such as xdg-open (or set MAMBOMEME_VIEWER)"
            )


def no_match_text(cues: Sequence[str], filters: Filters, semantic: str) -> str:
    tips = ["fewer or other words", "an alternate cue after |"]
    if any(vars(filters).values()):
        tips.append("clearing the filters (f)")
    if semantic != "ready":
        tips.append("again once semantic search is ready")
    return f"no confident match for {' | '.join(cues)!r}. Try {', '.join(tips)}."


@contextmanager
def paused_screen(loop: urwid.MainLoop) -> Iterator[None]:
    """Give the terminal back (normal screen, cooked mode) for the block, then redraw."""
    loop.screen.stop()
    try:
        yield
    finally:
        loop.screen.start()
        loop.screen.clear()
        loop.draw_screen()


class _Top(urwid.WidgetWrap[urwid.Widget]):
    """The top widget: looks every key up in the binding table before the widgets see it."""

    def __init__(self, controller: Controller, body: urwid.Widget) -> None:
        self.controller = controller
        super().__init__(body)

    def set_body(self, body: urwid.Widget) -> None:
        self._w = body

    def keypress(self, size: tuple[int, ...], key: str) -> str | None:
        self.controller.info.message = ""  # a notice lasts until the next key
        unhandled: str | None = None
        if not self.controller.handle_key(key):
            unhandled = super().keypress(size, key)
        self.controller.refresh_hint()
        return unhandled


class Controller:
    def __init__(
        self,
        search: SearchFn,
        options: TuiOptions,
        feedback: FeedbackLog,
        item_lookup: ItemLookup = lambda _id: None,
        load_dense: Callable[[], None] | None = None,
        open_backend: Callable[[], object] | None = None,
        screen: urwid.BaseScreen | None = None,
    ) -> None:
        self.options = options
        self.feedback = feedback
        self.item_lookup = item_lookup
        dense = load_dense if options.system != QUICK_SYSTEM else None
        self.worker = SearchWorker(search, options.limit, self._wake, open_backend, dense)
        self.screen = screen
        self.query = QueryEdit()
        self.results = ResultsList(on_select=self._on_select)
        self.preview = PreviewPane(graphics=options.graphics != "blocks")
        self.status = StatusBar()
        self.info = StatusInfo(
            release=options.release,
            semantic="loading" if dense else "off",
            feedback=feedback.enabled,
            hint=keys.hint_line(),
        )
        self.layout = PreviewLayout(
            self.results, self.preview, PREVIEW_MIN_COLS, on_layout=self._on_layout
        )
        self.frame = urwid.Frame(
            body=self.layout,
            header=urwid.AttrMap(self.query, "query"),
            footer=self.status,
            focus_part="header",
        )
        self.top = _Top(self, self.frame)
        self.overlay: str = ""  # "", "help" or "filters"
        self.dialog: FilterDialog | None = None
        self.help: HelpView | None = None
        self.filters = Filters()
        self.set_preview(options.show_preview)
        self.loop: urwid.MainLoop | None = None
        self.exit_code = 0
        self.chosen_path: Path | None = None
        # search state (main thread only unless noted)
        self.seq = 0
        self.last_job: Job | None = None  # the latest submitted search
        self._reselect: tuple[int, str] | None = None  # (seq, item id) to keep selected
        self._typing_burst = False  # this read of input held several printable keys
        self._focus_results: str | None = None  # the query text whose results take the focus
        self._live_due: float | None = None  # perf_counter time of the pending live search
        self._live_alarm: object = None
        self.response: SearchResponse | None = None
        self.rendered_at = 0.0
        self.chosen = False
        self.previewed: set[str] = set()
        self._applying = False
        self._seen_dense_state = self.info.semantic
        self._signal = 0
        self._pipe = -1
        self.refresh_hint()
        urwid.connect_signal(self.query, "postchange", self._on_query_changed)
        if parse_cues(options.query):
            self.query.set_edit_text(options.query)
            self.query.set_edit_pos(len(options.query))
            self.do_submit()

    # ----- life cycle -------------------------------------------------------------------------

    def build_loop(self) -> urwid.MainLoop:
        self.loop = urwid.MainLoop(
            self.top,
            PALETTE,
            screen=self.screen,
            handle_mouse=False,
            input_filter=self.filter_input,
        )
        self.screen = self.loop.screen
        colors = getattr(self.screen, "colors", 256)
        self.preview.colour_mode = preview.colour_mode(int(colors))
        self._pipe = self.loop.watch_pipe(self._on_wakeup)
        return self.loop

    def start_threads(self) -> None:
        self.worker.start()

    def stop_threads(self) -> None:
        self.worker.stop()
        self.worker.join()

    def run(self, type_ahead: Callable[[], bytes] | None = None) -> int:
        """Run until quit, a --print-choice choice, a signal or an error; returns an exit code.

        `type_ahead` returns the bytes typed before the screen starts; they are handled right
        after the first draw, as if typed then.
        """
        loop = self.build_loop()
        previous = {s: signal.signal(s, self._on_signal) for s in EXIT_CODES}
        self.start_threads()
        try:
            pending = type_ahead() if type_ahead is not None else b""
            if pending:
                loop.set_alarm_in(0, lambda _loop, _data: self.feed_bytes(pending))
            loop.run()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.worker.stop()
            if self.screen is not None and self.screen.started:
                self.screen.stop()  # the terminal is restored before a dense load is awaited
            self.worker.join()
            os.close(self._pipe)
        return self.exit_code

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        self._signal = signum
        self._wake(b"s")

    def _wake(self, data: bytes) -> None:
        try:
            os.write(self._pipe, data)
        except OSError:
            pass  # the loop has already stopped

    def has_outcomes(self) -> bool:
        """True when the worker has delivered something the main loop has not applied yet."""
        return self.worker.has_outcomes()

    def feed_bytes(self, data: bytes) -> None:
        """Handle raw terminal input (the type-ahead) as the loop would have."""
        if self.loop is None or not isinstance(self.screen, urwid.display.raw.Screen):
            return
        decoded, raw = self.screen.parse_input(None, None, list(data), wait_for_more=False)
        names = [k for k in decoded if isinstance(k, str)]
        self.loop.process_input(self.filter_input(names, raw))
        self._draw()

    def filter_input(self, keys_read: list[Any], _raw: list[int]) -> list[Any]:
        """The MainLoop's input filter: notes whether this read is a burst of typing."""
        printable = sum(1 for k in keys_read if isinstance(k, str) and len(k) == 1)
        self._typing_burst = printable > 1
        return keys_read

    def feed_keys(self, keys_read: Sequence[str], size: tuple[int, int]) -> None:
        """Headless input (tests): one read of `keys_read`, through the filter, to the widgets."""
        for key in self.filter_input(list(keys_read), []):
            self.top.keypress(size, key)

    def _on_wakeup(self, _data: bytes) -> bool:
        """Main-loop side of the pipe: exit on a signal, else apply what the threads delivered."""
        return self.process_wakeup()

    def process_wakeup(self) -> bool:
        if self._signal:
            self.exit_code = EXIT_CODES.get(signal.Signals(self._signal), 1)
            self._record_abandon()
            raise urwid.ExitMainLoop()
        delivery = self.worker.take()
        outcomes, dense_state = delivery.outcomes, delivery.dense_state
        if delivery.backend_error:
            self.info.error = delivery.backend_error
            self.status.update(self.info)
        if dense_state != self._seen_dense_state:
            self._seen_dense_state = dense_state
            if dense_state == "ready":
                self.info.semantic = "ready"  # the status line says sem:ready; the hint stays
                if self._rerun_with_dense():
                    self.info.message = "semantic search ready: searching again with it"
            elif dense_state.startswith("failed"):
                self.info.semantic = "failed"
                self.info.error = f"semantic search {dense_state}; lexical search still works"
            self.status.update(self.info)
        current = [o for o in outcomes if o.job.seq == self.seq]  # older ones are stale
        if current:
            self._apply(current[-1])
        self.refresh_hint()
        self._draw()
        return True

    # ----- keys -------------------------------------------------------------------------------

    def context(self) -> str:
        if self.overlay == "help":
            return keys.HELP
        if self.overlay == "filters":
            return keys.FILTERS
        if self.frame.focus_position != "header":
            return keys.RESULTS
        if self.query.edit_text or self._typing_burst:
            return keys.QUERY
        return keys.EMPTY_QUERY

    def situation(self) -> str:
        """Which hint of keys.HINTS fits where the focus is ("" in a dialog or the help)."""
        context = self.context()
        found = bool(self.results.result_rows)
        if context == keys.RESULTS:
            return "preview" if self.layout.mode == "full" else "results"
        if context == keys.QUERY:
            return "query+results" if found else "query"
        if context == keys.EMPTY_QUERY:
            return "empty+results" if found else "first"
        return ""

    def refresh_hint(self) -> None:
        """Make the hint line say what the keys do where the focus is now."""
        situation = self.situation()
        if situation:
            self.info.hint = keys.hint_line(situation)
            self.status.update(self.info)

    def handle_key(self, key: str) -> bool:
        """Run the action bound to `key` in the current context; False lets widgets have it.

        In the results, a printable key bound to nothing there moves the focus to the end of the
        query line, where the widgets then type it (fzf's habit)."""
        context = self.context()
        action = keys.action_for(context, key)
        if context == keys.RESULTS and action is None and len(key) == 1 and key.isprintable():
            self.frame.focus_position = "header"
            self.query.set_edit_pos(len(self.query.edit_text))
            return False
        if context == keys.HELP and (action is None or not action.startswith(("help", "quit"))):
            self.close_overlay()  # any other key closes the help, and a bound one acts too
            if action is None or action == "close_help":
                return True
        if action is None:
            return False
        if action == self.options.raise_in:
            raise RuntimeError(f"injected failure in {action!r} ({ENV_TEST_RAISE})")
        getattr(self, f"do_{action}")()
        return True

    def do_submit(self) -> None:
        cues = parse_cues(self.query.edit_text)
        if not cues:
            self.info.message = "type a query first; separate alternate cues with |"
            self.status.update(self.info)
            return
        self._submit(cues, self.filters)
        self._focus_results = self.query.edit_text  # results, when some arrive, take the focus

    def _submit(self, cues: tuple[str, ...], filters: Filters, reformulated: bool = True) -> None:
        """Queue a search; `reformulated` records an unchosen list as a reformulation."""
        t0, t0_epoch = time.perf_counter(), time.time()
        self._cancel_live()
        if reformulated and self.response is not None and not self.chosen:
            self._record("reformulate")
        self.seq += 1
        system = self.options.system if self.info.semantic == "ready" else QUICK_SYSTEM
        self.last_job = Job(self.seq, cues, filters, system, t0, t0_epoch)
        self.worker.submit(self.last_job)
        self.info = replace(self.info, seq=self.seq, busy=True, message="", error="")
        self.status.update(self.info)

    def _rerun_with_dense(self) -> bool:
        """Search the latest cues again now that semantic search is ready; True if it did."""
        job = self.last_job
        if job is None or job.system == self.options.system:
            return False
        selected = self.results.selected
        self._submit(job.cues, job.filters, reformulated=False)
        if selected is not None:
            self._reselect = (self.seq, selected.item_id)
        return True

    # ----- search as you type (--live) ----------------------------------------------------------

    def _on_query_changed(self, _edit: object, _old: str) -> None:
        if not self.options.live:
            return
        self._cancel_live()
        if not parse_cues(self.query.edit_text):
            return
        self._live_due = time.perf_counter() + self.options.live_debounce_s
        if self.loop is not None:
            self._live_alarm = self.loop.set_alarm_in(
                self.options.live_debounce_s, lambda _loop, _data: self.live_tick()
            )

    def _cancel_live(self) -> None:
        self._live_due = None
        if self._live_alarm is not None and self.loop is not None:
            self.loop.remove_alarm(self._live_alarm)
        self._live_alarm = None

    def live_tick(self, now: float | None = None) -> bool:
        """Run the pending live search if its debounce time has come; True if it ran."""
        due = self._live_due
        if due is None or (time.perf_counter() if now is None else now) < due:
            return False
        self._live_alarm = None
        cues = parse_cues(self.query.edit_text)
        last = self.last_job
        if last is not None and (last.cues, last.filters) == (cues, self.filters):
            self._live_due = None
            return False
        self._submit(cues, self.filters, reformulated=False)  # keystrokes are not reformulations
        self._draw()
        return True

    def do_clear_query(self) -> None:
        self.query.set_edit_text("")

    def do_toggle_focus(self) -> None:
        if self.frame.focus_position == "header" and not self.results.result_rows:
            self.info.message = "no results to browse: type a query and press enter"
            self.status.update(self.info)
            return
        self.frame.focus_position = "body" if self.frame.focus_position == "header" else "header"

    def do_focus_query(self) -> None:
        self.frame.focus_position = "header"

    def do_next(self) -> None:
        self.results.move(1)

    def do_previous(self) -> None:
        self.results.move(-1)

    def do_first(self) -> None:
        self.results.move_to(0)

    def do_last(self) -> None:
        self.results.move_to(-1)

    def do_details_down(self) -> None:
        self.preview.scroll(1)

    def do_details_up(self) -> None:
        self.preview.scroll(-1)

    def do_choose(self) -> None:
        target = self._target()
        if target is None:
            return
        result, path = target
        self.chosen = True
        self._record("choose", result)
        if self.options.print_choice:
            self.chosen_path = path
            raise urwid.ExitMainLoop()
        copy = clipboard.copy_text(str(path), self._terminal_write)
        self.info.message = f"chose #{result.rank} {result.item_id}; {copy.describe('path')}"
        self.status.update(self.info)

    def do_open(self) -> None:
        target = self._target()
        if target is None or self.loop is None:
            return
        result, path = target
        viewer = self.options.viewer
        if not viewer or not viewer[0].strip():  # never run the image itself as the program
            self.info.error = "no image viewer command (--viewer or MAMBOMEME_VIEWER)"
            self.status.update(self.info)
            return
        self._record("open", result)
        try:
            with paused_screen(self.loop):
                done = subprocess.run([*viewer, str(path)], check=False)
            self.info.error = "" if done.returncode == 0 else f"viewer exited {done.returncode}"
            self.info.message = f"opened {path.name}"
        except OSError as exc:
            self.info.error = f"cannot run viewer {viewer[0]!r}: {exc}"
        self.status.update(self.info)

    def do_copy_path(self) -> None:
        target = self._target()
        if target is None:
            return
        result, path = target
        self._record("copy", result)
        self.info.message = clipboard.copy_text(str(path), self._terminal_write).describe("path")
        self.status.update(self.info)

    def do_copy_image(self) -> None:
        target = self._target()
        if target is None:
            return
        result, path = target
        self._record("copy", result)
        image = clipboard.copy_image(path)
        if image.copied:
            self.info.message = image.describe("image")
        else:
            text = clipboard.copy_text(str(path), self._terminal_write)
            self.info.message = f"{image.describe('image')}; {text.describe('path')}"
        self.status.update(self.info)

    def do_cycle_kind(self) -> None:
        i = _KIND_CYCLE.index(self.filters.kind) if self.filters.kind in _KIND_CYCLE else 0
        self._set_filters(replace(self.filters, kind=_KIND_CYCLE[(i + 1) % len(_KIND_CYCLE)]))

    def do_filters(self) -> None:
        self.dialog = FilterDialog(self.filters)
        self.overlay = "filters"
        self.top.set_body(urwid.Overlay(self.dialog, self.frame, "center", 52, "middle", 7))

    def do_apply_filters(self) -> None:
        assert self.dialog is not None
        new = self.dialog.filters()
        if new.kind is not None and new.kind not in KINDS:
            self.info.error = f"filter kind: expected one of {', '.join(KINDS)}, got {new.kind!r}"
            self.status.update(self.info)
            return
        self.close_overlay()
        self._set_filters(new)

    def do_cancel(self) -> None:
        self.close_overlay()

    def do_toggle_preview(self) -> None:
        """Beside the list from PREVIEW_MIN_COLS columns; on a narrower terminal, full screen."""
        if self.layout.narrow:
            self.layout.set_full(not self.layout.full)
        else:
            self.set_preview(not self.layout.wanted)

    def do_toggle_feedback(self) -> None:
        self.feedback.set_enabled(not self.feedback.enabled)
        self.info.feedback = self.feedback.enabled
        self.info.message = (
            f"feedback on: local events in {self.feedback.path}"
            if self.feedback.enabled
            else "feedback off: nothing more is written"
        )
        self.status.update(self.info)

    def do_help(self) -> None:
        if self.overlay == "help":
            self.close_overlay()
            return
        self.close_overlay()
        self.overlay = "help"
        self.help = HelpView()
        self.top.set_body(
            urwid.Overlay(
                self.help, self.frame, "center", ("relative", 96), "middle", ("relative", 96)
            )
        )

    def do_help_down(self) -> None:
        if self.help is not None:
            self.help.scroll(1)

    def do_help_up(self) -> None:
        if self.help is not None:
            self.help.scroll(-1)

    def do_help_page_down(self) -> None:
        if self.help is not None:
            self.help.scroll(self.help.page)

    def do_help_page_up(self) -> None:
        if self.help is not None:
            self.help.scroll(-self.help.page)

    def do_close_help(self) -> None:
        self.close_overlay()

    def do_quit(self) -> None:
        self._record_abandon()
        raise urwid.ExitMainLoop()

    # ----- helpers ----------------------------------------------------------------------------

    def close_overlay(self) -> None:
        self.overlay = ""
        self.dialog = None
        self.help = None
        self.top.set_body(self.frame)

    @property
    def preview_visible(self) -> bool:
        """The preview pane is on screen: wanted, and the terminal is wide enough."""
        return self.layout.shown

    def set_preview(self, wanted: bool) -> None:
        self.layout.set_wanted(wanted)

    def _on_layout(self, _cols: int, rows: int, shown: bool) -> None:
        """A new size or preview state: the image gets half of the body's rows beside the list,
        all but a few metadata lines of them in the full-screen preview."""
        if shown:
            full = self.layout.mode == "full"
            image_rows = rows - FULL_PREVIEW_TEXT_ROWS if full else rows // 2
            self.preview.set_image_rows(max(3, image_rows))
            self._show_preview()

    def _set_filters(self, filters: Filters) -> None:
        self.filters = filters
        self.info.filters = filters
        self.status.update(self.info)
        if parse_cues(self.query.edit_text):
            self.do_submit()

    def _apply(self, outcome: Outcome) -> None:
        """Show a current result (or error), draw, and only then stop the submit-to-render clock."""
        self.info.busy = False
        self.previewed = set()
        self.chosen = False
        if outcome.response is None:
            self.response = None
            self.info.count, self.info.routes, self.info.error = None, (), outcome.error
            self.results.set_message(("error", "search failed; see the status bar"))
        else:
            response = outcome.response
            self.response = response
            self.info.count = len(response.results)
            self.info.routes = tuple(sorted({r for res in response.results for r in res.routes}))
            self._applying = True
            try:
                if response.results:
                    self.results.set_results(response.results, response.cues)
                    if self._reselect is not None and self._reselect[0] == outcome.job.seq:
                        self.results.select_item(self._reselect[1])
                else:
                    text = no_match_text(response.cues, outcome.job.filters, self.info.semantic)
                    self.results.set_message(("message", text))
            finally:
                self._applying = False
        self._follow_results(outcome)
        self.info.ms = None
        self.status.update(self.info)
        self.preview.show(None, None, None)
        self._draw()
        t1 = time.perf_counter()
        ms = (t1 - outcome.job.t0) * 1000.0
        self.rendered_at = t1
        self._write_timing(outcome, ms)
        self.info.ms = ms
        self.status.update(self.info)
        if self.preview_visible:
            self._show_preview()

    def _follow_results(self, outcome: Outcome) -> None:
        """Focus follows results: the list takes it when the submitted query found something
        (unless the query was edited since); no results or an error leave it on the query."""
        found = outcome.response is not None and bool(outcome.response.results)
        wanted = self._focus_results
        if outcome.job.seq == self.seq:
            self._focus_results = None
        if not found:
            self.frame.focus_position = "header"
        elif wanted is not None and wanted == self.query.edit_text and not self.overlay:
            self.frame.focus_position = "body"

    def _write_timing(self, outcome: Outcome, ms: float) -> None:
        if self.options.timing_file is None:
            return
        record = {
            "seq": outcome.job.seq,
            "ms": round(ms, 3),
            "results": 0 if outcome.response is None else len(outcome.response.results),
            "engine_ms": None
            if outcome.response is None
            else outcome.response.timings_ms.get("total"),
            "system": outcome.job.system,
            "accepted_epoch": outcome.job.t0_epoch,
            "drawn_epoch": outcome.job.t0_epoch + ms / 1000.0,
            "error": outcome.error,
        }
        with self.options.timing_file.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")

    def _draw(self) -> None:
        if self.loop is not None and self.screen is not None and self.screen.started:
            self.loop.draw_screen()

    def _on_select(self) -> None:
        if self._applying:
            return
        result = self.results.selected
        if result is not None and self.preview_visible and result.item_id not in self.previewed:
            self.previewed.add(result.item_id)
            self._record("preview", result)
        self._show_preview()

    def _show_preview(self) -> None:
        if not self.preview_visible:
            return
        result = self.results.selected
        if result is None:
            self.preview.show(None, None, None)
            return
        self.preview.show(result, self.item_lookup(result.item_id), self._path(result))

    def _path(self, result: Result) -> Path:
        path = Path(result.preview)
        return path if path.is_absolute() else (self.options.build_dir / path).resolve()

    def image_placement(self) -> graphics.Placement | None:
        """Where on the screen the preview's image cells are, for a graphics protocol to draw
        the picture over them; None when no image shows (hidden, scrolled off, under a dialog)."""
        view = self.preview.image_view
        if view is None or not self.preview_visible or self.overlay or self.preview.offset > 1:
            return None
        cols, rows = self.layout.size
        if self.layout.mode == "side":
            widths = self.layout.columns.column_widths((cols, rows))
            left, width = widths[0] + self.layout.columns.dividechars, widths[1]
        else:
            left, width = 0, cols
        top = self.frame.header.rows((cols,)) if self.frame.header is not None else 0
        if self.preview.offset == 0:
            top += self.preview.path_rows(width)
        cells = view.cells(width)
        if cells is None:
            return None
        return graphics.Placement(view.path, top, left, cells[0], cells[1])

    def _target(self) -> tuple[Result, Path] | None:
        result = self.results.selected
        if result is None:
            self.info.message = "no result selected"
            self.status.update(self.info)
            return None
        if not result.preview.strip():  # "" would resolve to the build folder itself
            self.info.message = f"#{result.rank} {result.item_id} has no image file"
            self.status.update(self.info)
            return None
        return result, self._path(result)

    def _terminal_write(self, data: str) -> bool:
        """Write to the terminal (OSC 52); False when there is no terminal screen."""
        if self.screen is not None and isinstance(self.screen, urwid.display.raw.Screen):
            try:
                self.screen.write(data)
                self.screen.flush()
            except OSError:
                return False
            return True
        return False

    def _record(self, action: str, result: Result | None = None) -> None:
        if self.response is None:
            return
        shown = [(r.item_id, r.rank) for r in self.response.results]
        since = (time.perf_counter() - self.rendered_at) * 1000.0
        target = None if result is None else (result.item_id, result.rank)
        try:
            self.feedback.record(
                action, self.response.request_id, self.response.cues, shown, since, target
            )
        except Exception as exc:  # feedback must never break searching
            self.info.error = f"feedback not written: {exc}"
            self.status.update(self.info)

    def _record_abandon(self) -> None:
        if self.response is not None and not self.chosen:
            self._record("abandon")


def run_on_terminal(
    backend: LazyEngine, options: TuiOptions, log: FeedbackLog, tty_in: TextIO, tty_out: TextIO
) -> tuple[int, Path | None]:
    """Run the UI on the terminal `tty_in` / `tty_out`, keeping keys typed before the first
    draw: (its exit status, the image chosen with --print-choice or None)."""
    with HeldInput(tty_in.fileno()) as held:
        if options.graphics == "blocks":
            screen = urwid.display.raw.Screen(input=tty_in, output=tty_out)
        else:
            screen = graphics.GraphicsScreen(
                graphics.Painter(options.graphics), lambda: None, input=tty_in, output=tty_out
            )
        controller = Controller(
            backend.search,
            options,
            log,
            item_lookup=backend.item,
            load_dense=backend.load_dense,
            open_backend=backend.open,
            screen=screen,
        )
        if isinstance(screen, graphics.GraphicsScreen):
            screen.placement = controller.image_placement
        code = controller.run(type_ahead=held.drain)
    return code, controller.chosen_path
