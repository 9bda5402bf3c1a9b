"""The TUI controller: owns the urwid MainLoop, the search worker thread and the terminal's life.

- Widgets get records, never the engine: the controller is built on an injected `search`
  callable, an optional `load_dense` callable (run in a background thread; lexical "bm25" search
  is used until it finishes) and an `item_lookup` for the preview's metadata.
- Searches run on one worker thread. Each submit gets a sequence number; a newer submit replaces
  a job not yet started, and a result whose sequence number is not the latest is dropped. The
  worker wakes the main loop through `loop.watch_pipe`; the controller then redraws explicitly.
- Submit-to-render (ms) runs from the moment the submit key is accepted until `draw_screen` has
  drawn the status and the complete list; with a timing file each request appends one JSON line.
- The terminal is restored on every exit path: urwid stops the screen on exceptions, `run` adds a
  try/finally, SIGINT/SIGTERM/SIGHUP end the loop through the wakeup pipe, and external viewers
  run inside `paused_screen`.
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
from typing import Any

import urwid

from mambomeme.corpus.schema import KINDS, Item
from mambomeme.errors import MamboMemeError
from mambomeme.search.results import Filters, Result, SearchResponse
from mambomeme.tui import clipboard, keys, preview
from mambomeme.tui.feedback import FeedbackLog
from mambomeme.tui.widgets import (
    PALETTE,
    FilterDialog,
    PreviewPane,
    QueryEdit,
    ResultsList,
    StatusBar,
    StatusInfo,
    help_view,
)
from mambomeme.tui.worker import Job, Outcome, SearchFn, SearchWorker

ItemLookup = Callable[[str], "Item | None"]
ENV_TEST_RAISE = "MAMBOMEME_TUI_TEST_RAISE"  # test hook: an action whose handler raises
EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}
_KIND_CYCLE: tuple[str | None, ...] = (None, *KINDS)


@dataclass(frozen=True)
class TuiOptions:
    build_dir: Path
    release: str
    limit: int = 20
    system: str = "hybrid"  # used once semantic search is ready; "bm25" until then
    print_choice: bool = False
    viewer: tuple[str, ...] = ("xdg-open",)
    timing_file: Path | None = None
    show_preview: bool = True
    raise_in: str = ""

    def __post_init__(self) -> None:
        if not self.viewer or not self.viewer[0].strip():
            raise MamboMemeError(
                f"--viewer: the image viewer command is blank ({self.viewer!r}); give a program "
                "such as xdg-open (or set MAMBOMEME_VIEWER)"
            )


def parse_cues(text: str) -> tuple[str, ...]:
    """Alternate cues are separated by '|'; blank cues are ignored."""
    return tuple(c.strip() for c in text.split("|") if c.strip())


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
        if self.controller.handle_key(key):
            return None
        return super().keypress(size, key)


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
        dense = load_dense if options.system != "bm25" else None
        self.worker = SearchWorker(search, options.limit, self._wake, open_backend, dense)
        self.screen = screen
        self.query = QueryEdit()
        self.results = ResultsList(on_select=self._on_select)
        self.preview = PreviewPane()
        self.status = StatusBar()
        self.info = StatusInfo(
            release=options.release,
            semantic="loading" if dense else "off",
            feedback=feedback.enabled,
        )
        self.columns = urwid.Columns([("weight", 55, self.results)], dividechars=1)
        self.frame = urwid.Frame(
            body=self.columns,
            header=urwid.AttrMap(self.query, "query"),
            footer=self.status,
            focus_part="header",
        )
        self.top = _Top(self, self.frame)
        self.overlay: str = ""  # "", "help" or "filters"
        self.dialog: FilterDialog | None = None
        self.filters = Filters()
        self.preview_visible = False
        self.set_preview(options.show_preview)
        self.loop: urwid.MainLoop | None = None
        self.exit_code = 0
        self.chosen_path: Path | None = None
        # search state (main thread only unless noted)
        self.seq = 0
        self.response: SearchResponse | None = None
        self.rendered_at = 0.0
        self.chosen = False
        self.previewed: set[str] = set()
        self._applying = False
        self._seen_dense_state = self.info.semantic
        self._signal = 0
        self._pipe = -1
        self.status.update(self.info)

    # ----- life cycle -------------------------------------------------------------------------

    def build_loop(self) -> urwid.MainLoop:
        self.loop = urwid.MainLoop(self.top, PALETTE, screen=self.screen, handle_mouse=False)
        self.screen = self.loop.screen
        colors = getattr(self.screen, "colors", 256)
        self.preview.colour_mode = preview.colour_mode(int(colors))
        self._pipe = self.loop.watch_pipe(self._on_wakeup)
        return self.loop

    def start_threads(self) -> None:
        self.worker.start()

    def stop_threads(self) -> None:
        self.worker.stop()

    def run(self) -> int:
        """Run until quit, a --print-choice choice, a signal or an error; returns an exit code."""
        loop = self.build_loop()
        previous = {s: signal.signal(s, self._on_signal) for s in EXIT_CODES}
        self.start_threads()
        try:
            loop.run()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.stop_threads()
            if self.screen is not None and self.screen.started:
                self.screen.stop()
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
                self.info.semantic = "ready"
                self.info.message = "semantic search ready"
            elif dense_state.startswith("failed"):
                self.info.semantic = "failed"
                self.info.error = f"semantic search {dense_state}; lexical search still works"
            self.status.update(self.info)
        current = [o for o in outcomes if o.job.seq == self.seq]  # older ones are stale
        if current:
            self._apply(current[-1])
        self._draw()
        return True

    # ----- keys -------------------------------------------------------------------------------

    def context(self) -> str:
        if self.overlay == "filters":
            return keys.FILTERS
        return keys.QUERY if self.frame.focus_position == "header" else keys.RESULTS

    def handle_key(self, key: str) -> bool:
        """Run the action bound to `key` in the current context; False lets widgets have it."""
        if self.overlay == "help":
            self.close_overlay()
            return True
        action = keys.action_for(self.context(), key)
        if action is None:
            return False
        if action == self.options.raise_in:
            raise RuntimeError(f"injected failure in {action!r} ({ENV_TEST_RAISE})")
        getattr(self, f"do_{action}")()
        return True

    def do_submit(self) -> None:
        t0, t0_epoch = time.perf_counter(), time.time()
        cues = parse_cues(self.query.edit_text)
        if not cues:
            self.info.message = "type a query first; separate alternate cues with |"
            self.status.update(self.info)
            return
        if self.response is not None and not self.chosen:
            self._record("reformulate")
        self.seq += 1
        system = self.options.system if self.info.semantic == "ready" else "bm25"
        self.worker.submit(Job(self.seq, cues, self.filters, system, t0, t0_epoch))
        self.info = replace(self.info, seq=self.seq, busy=True, message="", error="")
        self.status.update(self.info)
        self.frame.focus_position = "body"

    def do_clear_query(self) -> None:
        self.query.set_edit_text("")

    def do_toggle_focus(self) -> None:
        self.frame.focus_position = "body" if self.frame.focus_position == "header" else "header"

    def do_focus_query(self) -> None:
        self.frame.focus_position = "header"

    def do_next(self) -> None:
        self.results.move(1)

    def do_previous(self) -> None:
        self.results.move(-1)

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
        how = clipboard.copy_text(str(path), self._terminal_write)
        self.info.message = f"chose #{result.rank} {result.item_id}; path copied ({how})"
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
        how = clipboard.copy_text(str(path), self._terminal_write)
        self.info.message = f"path copied ({how})"
        self.status.update(self.info)

    def do_copy_image(self) -> None:
        target = self._target()
        if target is None:
            return
        result, path = target
        self._record("copy", result)
        how = clipboard.copy_image(path)
        if how is None:
            how = clipboard.copy_text(str(path), self._terminal_write)
            self.info.message = f"no image clipboard (xclip/wl-copy); path copied ({how})"
        else:
            self.info.message = f"image copied ({how})"
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
        self.set_preview(not self.preview_visible)

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
        self.overlay = "help"
        self.top.set_body(
            urwid.Overlay(
                help_view(), self.frame, "center", ("relative", 90), "middle", ("relative", 90)
            )
        )

    def do_quit(self) -> None:
        self._record_abandon()
        raise urwid.ExitMainLoop()

    # ----- helpers ----------------------------------------------------------------------------

    def close_overlay(self) -> None:
        self.overlay = ""
        self.dialog = None
        self.top.set_body(self.frame)

    def set_preview(self, visible: bool) -> None:
        self.preview_visible = visible
        contents: list[Any] = [(self.results, self.columns.options("weight", 55))]
        if visible:
            contents.append((self.preview, self.columns.options("weight", 45)))
        self.columns.contents = contents
        self.columns.focus_position = 0
        if visible:
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
                else:
                    text = no_match_text(response.cues, outcome.job.filters, self.info.semantic)
                    self.results.set_message(("message", text))
            finally:
                self._applying = False
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
        if self.screen is not None and self.screen.started:
            rows = self.screen.get_cols_rows()[1]
            self.preview.image_rows = max(3, (rows - 4) // 3)  # room left for the text
        self.preview.show(result, self.item_lookup(result.item_id), self._path(result))

    def _path(self, result: Result) -> Path:
        path = Path(result.preview)
        return path if path.is_absolute() else (self.options.build_dir / path).resolve()

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

    def _terminal_write(self, data: str) -> None:
        if self.screen is not None and isinstance(self.screen, urwid.display.raw.Screen):
            self.screen.write(data)
            self.screen.flush()

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
