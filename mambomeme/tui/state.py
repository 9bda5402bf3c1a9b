"""The controller's shared state and helpers (ControllerState) and the top widget that hands
every key to the controller's binding table first."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import urwid

from mambomeme.search.cues import parse_cues
from mambomeme.search.results import Filters, Result, SearchResponse
from mambomeme.search.systems import QUICK_SYSTEM
from mambomeme.tui import keys
from mambomeme.tui.feedback import FeedbackLog
from mambomeme.tui.options import (
    ENV_TEST_RAISE,
    ItemLookup,
    TuiOptions,
)
from mambomeme.tui.widgets import (
    FilterDialog,
    HelpView,
    PreviewLayout,
    PreviewPane,
    QueryEdit,
    ResultsList,
    StatusBar,
    StatusInfo,
)
from mambomeme.tui.worker import Job, SearchWorker


class _Top(urwid.WidgetWrap[urwid.Widget]):
    """The top widget: looks every key up in the binding table before the widgets see it."""

    def __init__(self, controller: ControllerState, body: urwid.Widget) -> None:
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


class ControllerState:
    """What every part of the controller reads and writes (app.Controller sets it up), and the
    helpers they share: the key context and hint, submitting a search, overlays, drawing,
    feedback records."""

    options: TuiOptions
    feedback: FeedbackLog
    item_lookup: ItemLookup
    worker: SearchWorker
    screen: urwid.BaseScreen | None
    query: QueryEdit
    results: ResultsList
    preview: PreviewPane
    status: StatusBar
    info: StatusInfo
    layout: PreviewLayout
    frame: urwid.Frame[Any, Any, Any]
    top: _Top
    overlay: str  # "", "help" or "filters"
    dialog: FilterDialog | None
    help: HelpView | None
    filters: Filters
    loop: urwid.MainLoop | None
    exit_code: int
    chosen_path: Path | None
    seq: int
    last_job: Job | None  # the latest submitted search
    _reselect: tuple[int, str] | None  # (seq, item id) to keep selected
    _typing_burst: bool  # this read of input held several printable keys
    _focus_results: str | None  # the query text whose results take the focus
    _live_due: float | None  # perf_counter time of the pending live search
    _live_alarm: object
    response: SearchResponse | None
    rendered_at: float
    chosen: bool
    previewed: set[str]
    _applying: bool

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

    def _cancel_live(self) -> None:
        self._live_due = None
        if self._live_alarm is not None and self.loop is not None:
            self.loop.remove_alarm(self._live_alarm)
        self._live_alarm = None

    def _set_filters(self, filters: Filters) -> None:
        self.filters = filters
        self.info.filters = filters
        self.status.update(self.info)
        if parse_cues(self.query.edit_text):
            self.do_submit()

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

    def _draw(self) -> None:
        if self.loop is not None and self.screen is not None and self.screen.started:
            self.loop.draw_screen()

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
