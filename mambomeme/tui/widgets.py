"""The TUI's widgets. They get plain records (Result, Item, StatusInfo), never a database handle.

Canvas tests render them with `widget.render((cols,), focus).text` (flow widgets) or
`widget.render((cols, rows), focus).text` (box widgets), as urwid and pudb do.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import urwid

from mambomeme.corpus.schema import Item
from mambomeme.search.results import Filters, MatchedField, Result
from mambomeme.tui import keys, preview

PALETTE: list[tuple[str, str, str, str, str, str]] = [
    # name, fg, bg, mono, fg (256/true colour), bg (256/true colour)
    ("query", "white", "dark blue", "bold", "#fff", "#006"),
    ("rank", "yellow", "", "bold", "#fd0", ""),
    ("title", "white", "", "bold", "#fff", ""),
    ("template", "light cyan", "", "", "#6cf", ""),
    ("snippet", "light gray", "", "", "#bbb", ""),
    ("match", "black", "yellow", "standout", "#000", "#fd0"),
    ("selected", "black", "light gray", "standout", "#000", "#ccc"),
    ("status", "black", "light gray", "standout", "#000", "#ccc"),
    ("message", "yellow", "", "bold", "#fd0", ""),
    ("error", "white", "dark red", "standout", "#fff", "#a00"),
    ("label", "light cyan", "", "bold", "#6cf", ""),
    ("dim", "dark gray", "", "", "#888", ""),
]
SELECTED_MAP: dict[str | None, str] = {
    k: "selected" for k in (None, "rank", "title", "template", "snippet", "dim")
}
SELECTED_MAP["match"] = "match"

_WORD = re.compile(r"\w+", re.UNICODE)


def query_words(cues: Sequence[str]) -> frozenset[str]:
    """Case-folded words of all cues: what the snippet highlighting looks for."""
    return frozenset(w.casefold() for cue in cues for w in _WORD.findall(cue))


def highlight(text: str, words: frozenset[str], base: str = "snippet") -> list[tuple[str, str]]:
    """urwid markup of `text` with every word in `words` (case-folded) in the 'match' attribute."""
    markup: list[tuple[str, str]] = []
    last = 0
    for m in _WORD.finditer(text):
        if m.group().casefold() in words:
            if m.start() > last:
                markup.append((base, text[last : m.start()]))
            markup.append(("match", m.group()))
            last = m.end()
    if last < len(text) or not markup:
        markup.append((base, text[last:]))
    return markup


class QueryEdit(urwid.Edit):
    """The query line. Enter and the other bound keys are handled by the controller."""

    def __init__(self) -> None:
        super().__init__(caption=("label", "query> "))


def snippet_field(result: Result) -> MatchedField:
    """The snippet to show: the first matched field not already on the row (title, template)."""
    for matched in result.matched_fields:
        if matched.field not in ("title", "template"):
            return matched
    return result.matched_fields[0]


class ResultRow(urwid.WidgetWrap[urwid.Widget]):
    """Two lines: rank, title and template; then the matched field and its highlighted snippet."""

    def __init__(self, result: Result, words: frozenset[str]) -> None:
        self.result = result
        head = urwid.Text(
            [
                ("rank", f"{result.rank:>2}. "),
                ("title", result.title),
                ("dim", " · "),
                ("template", result.template or result.kind),
            ],
            wrap="ellipsis",
        )
        if result.matched_fields:
            matched = snippet_field(result)
            body: list[Any] = [("dim", f"    {matched.field}: ")]
            body.extend(highlight(" ".join(matched.snippet.split()), words))
        else:
            body = [("dim", f"    via {'+'.join(result.routes) or 'no route'}")]
        pile = urwid.Pile([head, urwid.Text(body, wrap="ellipsis")])
        self._attr = urwid.AttrMap(pile, None)
        super().__init__(self._attr)

    def selectable(self) -> bool:
        return True

    def keypress(self, size: tuple[int, ...], key: str) -> str | None:
        return key

    def set_selected(self, selected: bool) -> None:
        self._attr.set_attr_map(dict(SELECTED_MAP) if selected else {None: None})


class ResultsList(urwid.WidgetWrap[urwid.Widget]):
    """The ranked list; the selected row stays highlighted whether or not the list has focus."""

    def __init__(self, on_select: Callable[[], None] | None = None) -> None:
        self.walker: urwid.SimpleFocusListWalker[Any] = urwid.SimpleFocusListWalker([])
        self.listbox = urwid.ListBox(self.walker)
        self.result_rows: list[ResultRow] = []
        self._selected = -1
        self.on_select = on_select
        urwid.connect_signal(self.walker, "modified", self._restyle)
        super().__init__(self.listbox)

    def set_results(self, results: Sequence[Result], cues: Sequence[str]) -> None:
        words = query_words(cues)
        self.result_rows = [ResultRow(r, words) for r in results]
        self._selected = -1
        self.walker[:] = self.result_rows
        if self.result_rows:
            self.walker.set_focus(0)
        self._restyle()

    def set_message(self, markup: Any) -> None:
        """Show a message (e.g. 'no confident match') in place of results."""
        self.result_rows = []
        self._selected = -1
        self.walker[:] = [urwid.Text(markup)]

    @property
    def selected(self) -> Result | None:
        if not self.result_rows:
            return None
        _, position = self.walker.get_focus()
        return self.result_rows[position].result if position is not None else None

    def move(self, step: int) -> None:
        if not self.result_rows:
            return
        _, position = self.walker.get_focus()
        target = max(0, min(len(self.result_rows) - 1, (position or 0) + step))
        self.walker.set_focus(target)

    def _restyle(self) -> None:
        if not self.result_rows:
            return
        _, position = self.walker.get_focus()
        if position == self._selected:
            return
        if 0 <= self._selected < len(self.result_rows):
            self.result_rows[self._selected].set_selected(False)
        if position is not None:
            self.result_rows[position].set_selected(True)
            self._selected = position
        if self.on_select is not None:
            self.on_select()


class ImageView(urwid.Widget):
    """A flow widget drawing an image file in half blocks, sized to the width it is given."""

    _sizing = frozenset([urwid.Sizing.FLOW])

    def __init__(self, path: str, max_rows: int, mode: str) -> None:
        super().__init__()
        self.path = path
        self.max_rows = max_rows
        self.mode = mode

    def _text(self, maxcol: int) -> urwid.Text:
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
    """The preview text: title, template, people, tags, text, description, licence, path."""

    def line(label: str, value: str) -> list[Any]:
        return [("label", f"{label}: "), value or "—", "\n"] if value else []

    markup: list[Any] = [("title", result.title), "\n"]
    markup += line("template", result.template)
    if item is not None:
        markup += line("people", ", ".join(item.people))
        markup += line("tags", ", ".join(item.tags))
        markup += line("text", item.ocr_text)
        markup += line("description", item.visual_description)
    markup += line("licence", result.license)
    markup += line("attribution", result.attribution)
    markup += line("path", path)
    if item is not None:
        markup += line("meaning", item.meaning)
        markup += line("language", item.language)
    markup += line("kind", result.kind)
    markup += line("routes", "+".join(result.routes))
    markup += line("id", result.item_id)
    if markup[-1] == "\n":
        markup.pop()
    return markup


class PreviewPane(urwid.WidgetWrap[urwid.Widget]):
    """Metadata and the image of one result; scrolls when longer than the pane."""

    def __init__(self, colour_mode: str = "256", image_rows: int = 10) -> None:
        self.walker: urwid.SimpleListWalker[Any] = urwid.SimpleListWalker(
            [urwid.Text(("dim", "no result selected"))]
        )
        self.colour_mode = colour_mode
        self.image_rows = image_rows
        super().__init__(urwid.ListBox(self.walker))

    def show(self, result: Result | None, item: Item | None, path: Path | None) -> None:
        if result is None:
            self.walker[:] = [urwid.Text(("dim", "no result selected"))]
            return
        widgets: list[urwid.Widget] = []
        if path is not None:
            widgets.append(ImageView(str(path), self.image_rows, self.colour_mode))
            widgets.append(urwid.Divider())
        widgets.append(urwid.Text(metadata_markup(result, item, str(path or result.preview))))
        self.walker[:] = widgets


@dataclass
class StatusInfo:
    """What the status bar shows; the controller fills it in."""

    seq: int = 0
    count: int | None = None
    ms: float | None = None
    routes: tuple[str, ...] = ()
    release: str = ""
    semantic: str = "loading"
    safe_mode: bool = True
    feedback: bool = False
    filters: Filters = field(default_factory=Filters)
    busy: bool = False
    message: str = ""
    error: str = ""


ROUTE_ABBREVIATIONS = {"lexical": "lex"}


def status_text(info: StatusInfo) -> str:
    """One line that fits 80 columns: seq, count, ms, routes, release, semantic, safe, feedback."""
    parts: list[str] = [f"#{info.seq}"]
    if info.busy:
        parts.append("searching…")
    elif info.count is not None:
        parts.append(f"{info.count} result{'s' if info.count != 1 else ''}")
        if info.ms is not None:
            parts.append(f"{info.ms:.0f} ms")
        routes = [ROUTE_ABBREVIATIONS.get(r, r) for r in info.routes]
        parts.append("+".join(routes) if routes else "no routes")
    parts.append(info.release)
    parts.append(f"sem:{info.semantic}")
    parts.append("safe:on" if info.safe_mode else "safe:OFF")
    parts.append(f"fb:{'on' if info.feedback else 'off'}")
    active = [f"{k}={v}" for k, v in vars(info.filters).items() if v]
    if active:
        parts.append(" ".join(active))
    return "  ".join(parts)


class StatusBar(urwid.WidgetWrap[urwid.Widget]):
    """Two lines: a message/error line, then the status fields (seq, count, ms, routes, ...)."""

    def __init__(self) -> None:
        self.message = urwid.Text("", wrap="ellipsis")
        self.fields = urwid.Text("", wrap="ellipsis")
        super().__init__(urwid.Pile([self.message, urwid.AttrMap(self.fields, "status")]))

    def update(self, info: StatusInfo) -> None:
        if info.error:
            self.message.set_text(("error", f"error: {info.error}"))
        else:
            self.message.set_text(("message", info.message))
        self.fields.set_text(status_text(info))


class FilterDialog(urwid.WidgetWrap[urwid.Widget]):
    """Edits the three filters; empty means any. The controller applies it on Enter."""

    def __init__(self, filters: Filters) -> None:
        self.kind = urwid.Edit(("label", "kind (template|meme): "), filters.kind or "")
        self.language = urwid.Edit(("label", "language (BCP 47):    "), filters.language or "")
        self.template = urwid.Edit(("label", "template:             "), filters.template or "")
        hint = urwid.Text(("dim", "enter: apply   esc: cancel   empty: any"))
        pile = urwid.Pile([self.kind, self.language, self.template, urwid.Divider(), hint])
        super().__init__(urwid.LineBox(pile, title="filters"))

    def filters(self) -> Filters:
        def value(edit: urwid.Edit) -> str | None:
            return edit.edit_text.strip() or None

        return Filters(
            kind=value(self.kind), language=value(self.language), template=value(self.template)
        )


def help_view() -> urwid.Widget:
    body: list[Any] = [urwid.Text(line) for line in keys.help_lines()]
    body.append(urwid.Divider())
    body.append(urwid.Text(("dim", "press any key to close")))
    return urwid.LineBox(urwid.ListBox(urwid.SimpleListWalker(body)), title="keys")
