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
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, TextIO

import urwid

from mambomeme.search.cues import parse_cues
from mambomeme.search.results import Filters, SearchResponse
from mambomeme.search.systems import QUICK_SYSTEM
from mambomeme.tui import graphics, keys, preview
from mambomeme.tui.actions import ItemActions
from mambomeme.tui.dialogs import Dialogs
from mambomeme.tui.feedback import FeedbackLog
from mambomeme.tui.live import LiveSearch
from mambomeme.tui.options import (
    ENV_TEST_RAISE,
    EXIT_CODES,
    LIVE_DEBOUNCE_S,
    PREVIEW_MIN_COLS,
    ItemLookup,
    TuiOptions,
    no_match_text,
)
from mambomeme.tui.previewing import Previewing
from mambomeme.tui.state import ControllerState, _Top
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

__all__ = [  # tests and cli/tui.py import these from here
    "ENV_TEST_RAISE", "LIVE_DEBOUNCE_S", "PREVIEW_MIN_COLS", "Controller", "TuiOptions",
    "no_match_text", "run_on_terminal",
]  # fmt: skip


class Controller(LiveSearch, Dialogs, ItemActions, Previewing, ControllerState):
    """The whole controller: its parts (live.py, dialogs.py, actions.py, previewing.py) share the
    state and helpers of state.py; this class owns the loop, the worker and the terminal."""

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
