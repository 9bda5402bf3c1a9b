"""The overlays: the filter dialog (and the kind cycle) and the scrolling help screen."""

from __future__ import annotations

from dataclasses import replace

import urwid

from mambomeme.corpus.schema import KINDS
from mambomeme.tui.options import (
    _KIND_CYCLE,
)
from mambomeme.tui.state import ControllerState
from mambomeme.tui.widgets import (
    FilterDialog,
    HelpView,
)


class Dialogs(ControllerState):
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
