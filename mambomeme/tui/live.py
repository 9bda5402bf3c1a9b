"""The query line: search as you type (--live, debounced by LIVE_DEBOUNCE_S), clearing it and
moving the focus between it and the results."""

from __future__ import annotations

import time

from mambomeme.search.cues import parse_cues
from mambomeme.tui.state import ControllerState


class LiveSearch(ControllerState):
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
