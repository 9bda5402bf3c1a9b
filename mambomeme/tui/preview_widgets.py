"""The preview widgets: the picture (ImageView: half blocks, or blank cells a graphics protocol
draws over), the pane of picture and metadata, and the layout that puts it beside the list or
full screen. Records in, never a database handle."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import urwid

from mambomeme.corpus.schema import Item
from mambomeme.search.results import Result
from mambomeme.tui import preview


class ImageView(urwid.Widget):
    """A flow widget drawing an image file in half blocks, sized to the width it is given.

    With `graphics` it draws blank cells of the image's size instead: the screen then writes the
    real image over them through the terminal's graphics protocol (graphics.py)."""

    _sizing = frozenset([urwid.Sizing.FLOW])

    def __init__(self, path: str, max_rows: int, mode: str, graphics: bool = False) -> None:
        super().__init__()
        self.path = path
        self.max_rows = max_rows
        self.mode = mode
        self.graphics = graphics

    def cells(self, maxcol: int) -> tuple[int, int] | None:
        """(cols, rows) the image takes at this width; None when it cannot be read."""
        try:
            size = preview.image_size(self.path)
        except (OSError, ValueError):
            return None
        cells = preview.fit(size[0], size[1], maxcol, self.max_rows)
        return cells if cells[0] > 0 else None

    def _text(self, maxcol: int) -> urwid.Text:
        if self.graphics:
            cells = self.cells(maxcol)
            if cells is None:
                return urwid.Text(("dim", "[no image]"))
            return urwid.Text("\n".join([" " * cells[0]] * cells[1]), wrap="clip")
        try:
            rows = preview.image_rows(self.path, maxcol, self.max_rows, self.mode)
        except (OSError, ValueError) as exc:
            return urwid.Text(("dim", f"[no image: {type(exc).__name__}]"))
        if not rows:
            return urwid.Text(("dim", "[empty image]"))
        markup: list[Any] = []
        for i, row in enumerate(rows):
            for run in row:
                if self.mode == "mono":
                    markup.append(run.text)
                else:
                    colors: Literal[256, 16777216] = 16777216 if self.mode == "truecolor" else 256
                    markup.append((urwid.AttrSpec(run.fg, run.bg, colors), run.text))
            if i < len(rows) - 1:
                markup.append("\n")
        return urwid.Text(markup, wrap="clip")

    def rows(self, size: tuple[int], focus: bool = False) -> int:
        return self._text(size[0]).rows(size, focus)

    def render(
        self, size: tuple[()] | tuple[int] | tuple[int, int], focus: bool = False
    ) -> urwid.Canvas:
        if len(size) != 1:
            raise ValueError(f"ImageView is a flow widget; got size {size}")
        return self._text(size[0]).render(size, focus)


def metadata_markup(result: Result, item: Item | None, path: str) -> list[Any]:
    """The details text: path first, then title, template, people, tags, text, description, ..."""

    def line(label: str, value: str) -> list[Any]:
        return [("label", f"{label}: "), value or "—", "\n"] if value else []

    markup: list[Any] = line("path", path)
    markup += [("title", result.title), "\n"]
    markup += line("template", result.template)
    if item is not None:
        markup += line("people", ", ".join(item.people))
        markup += line("tags", ", ".join(item.tags))
        markup += line("text", item.ocr_text)
        markup += line("description", item.visual_description)
    markup += line("licence", result.license)
    markup += line("attribution", result.attribution)
    if item is not None:
        markup += line("meaning", item.meaning)
        markup += line("language", item.language)
    markup += line("kind", result.kind)
    markup += line("routes", "+".join(result.routes))
    markup += line("id", result.item_id)
    if markup[-1] == "\n":
        markup.pop()
    return markup


def _split_lines(markup: list[Any]) -> list[list[Any]]:
    """Markup cut at its "\\n" items: one list per line (so a pane can scroll line by line)."""
    lines: list[list[Any]] = [[]]
    for part in markup:
        if part == "\n":
            lines.append([])
        else:
            lines[-1].append(part)
    return [line for line in lines if line]


class PreviewPane(urwid.WidgetWrap[urwid.Widget]):
    """The details of one result: its path first, the image, then the metadata; scrollable.

    `scroll` moves the first shown row (one metadata line, or the image), so a long description
    can be read in a short pane; `image_rows` is the image's height, set from the terminal size.
    """

    def __init__(
        self, colour_mode: str = "256", image_rows: int = 10, graphics: bool = False
    ) -> None:
        self.walker: urwid.SimpleListWalker[Any] = urwid.SimpleListWalker([])
        self.colour_mode = colour_mode
        self.image_rows = image_rows
        self.graphics = graphics  # reserve the cells; the screen draws the picture over them
        self.image_view: ImageView | None = None
        self.offset = 0
        self._rows: list[urwid.Widget] = [urwid.Text(("dim", "no result selected"))]
        self._shown: tuple[Result, Item | None, Path | None] | None = None
        super().__init__(urwid.ListBox(self.walker))
        self._refresh()

    def show(self, result: Result | None, item: Item | None, path: Path | None) -> None:
        self.offset = 0
        self._shown = None if result is None else (result, item, path)
        self._build()

    def set_image_rows(self, rows: int) -> None:
        """A new image height (the terminal grew or shrank); redraws the shown result."""
        if rows != self.image_rows:
            self.image_rows = rows
            self._build()

    def scroll(self, step: int) -> None:
        self.offset = max(0, min(len(self._rows) - 1, self.offset + step))
        self._refresh()

    def path_rows(self, cols: int) -> int:
        """How many rows the path line takes at `cols` columns (the image starts below it)."""
        first = self._rows[0] if self._rows else None
        return first.rows((cols,)) if isinstance(first, urwid.Text) else 0

    def _build(self) -> None:
        self.image_view = None
        if self._shown is None:
            self._rows = [urwid.Text(("dim", "no result selected"))]
            self._refresh()
            return
        result, item, path = self._shown
        lines = _split_lines(metadata_markup(result, item, str(path or result.preview)))
        rows: list[urwid.Widget] = [urwid.Text(lines[0])]  # the path
        if path is not None:
            self.image_view = ImageView(str(path), self.image_rows, self.colour_mode, self.graphics)
            rows.append(self.image_view)
        rows.extend(urwid.Text(line) for line in lines[1:])
        self._rows = rows
        self.offset = min(self.offset, len(rows) - 1)
        self._refresh()

    def _refresh(self) -> None:
        self.walker[:] = self._rows[self.offset :]


class PreviewLayout(urwid.WidgetWrap[urwid.Widget]):
    """The results, with the preview pane on their right when it is wanted and fits.

    Below `min_cols` columns there is no room beside the list: the preview is shown full screen
    in place of the list when `full` is set (the `p` key), else hidden. At each new size or mode
    `on_layout(cols, rows, shown)` lets the controller fill the pane and size the image.
    """

    def __init__(
        self,
        results: urwid.Widget,
        preview: urwid.Widget,
        min_cols: int,
        on_layout: Callable[[int, int, bool], None],
    ) -> None:
        self.results = results
        self.columns = urwid.Columns(
            [("weight", 55, results), ("weight", 45, preview)], dividechars=1
        )
        self.preview = preview
        self.min_cols = min_cols
        self.on_layout = on_layout
        self.wanted = True  # beside the list where it fits
        self.full = False  # full screen where it does not
        self.size: tuple[int, int] = (0, 0)
        super().__init__(results)

    @property
    def narrow(self) -> bool:
        """Drawn, and too narrow for the pane beside the list."""
        return 0 < self.size[0] < self.min_cols

    @property
    def mode(self) -> Literal["list", "side", "full"]:
        if self.size[0] == 0:
            return "list"
        if self.narrow:
            return "full" if self.full else "list"
        return "side" if self.wanted else "list"

    @property
    def shown(self) -> bool:
        return self.mode != "list"

    def set_wanted(self, wanted: bool) -> None:
        self.wanted = wanted
        self._switch()

    def set_full(self, full: bool) -> None:
        self.full = full
        self._switch()

    def _switch(self) -> None:
        targets = {"side": self.columns, "full": self.preview, "list": self.results}
        target = targets[self.mode]
        if self._w is not target:
            self._w = target
            self.columns.focus_position = 0
        if self.size != (0, 0):
            self.on_layout(self.size[0], self.size[1], self.shown)

    def _fit(self, size: tuple[int, ...]) -> None:
        if len(size) == 2 and (size[0], size[1]) != self.size:
            self.size = (size[0], size[1])
            self._switch()

    def render(self, size: tuple[int, ...], focus: bool = False) -> urwid.Canvas:
        self._fit(size)
        return super().render(size, focus)

    def keypress(self, size: tuple[int, ...], key: str) -> str | None:
        self._fit(size)
        return super().keypress(size, key)
