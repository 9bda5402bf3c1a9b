"""The preview pane as the controller drives it: shown beside the list or full screen, sized to
the terminal, and where a graphics protocol draws the picture."""

from __future__ import annotations

from mambomeme.tui import graphics
from mambomeme.tui.options import (
    FULL_PREVIEW_TEXT_ROWS,
)
from mambomeme.tui.state import ControllerState


class Previewing(ControllerState):
    def do_toggle_preview(self) -> None:
        """Beside the list from PREVIEW_MIN_COLS columns; on a narrower terminal, full screen."""
        if self.layout.narrow:
            self.layout.set_full(not self.layout.full)
        else:
            self.set_preview(not self.layout.wanted)

    def _on_layout(self, _cols: int, rows: int, shown: bool) -> None:
        """A new size or preview state: the image gets half of the body's rows beside the list,
        all but a few metadata lines of them in the full-screen preview."""
        if shown:
            full = self.layout.mode == "full"
            image_rows = rows - FULL_PREVIEW_TEXT_ROWS if full else rows // 2
            self.preview.set_image_rows(max(3, image_rows))
            self._show_preview()

    def _on_select(self) -> None:
        if self._applying:
            return
        result = self.results.selected
        if result is not None and self.preview_visible and result.item_id not in self.previewed:
            self.previewed.add(result.item_id)
            self._record("preview", result)
        self._show_preview()

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
