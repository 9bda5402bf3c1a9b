"""The TUI's widgets. They get plain records (Result, Item, StatusInfo), never a database handle.

Canvas tests render them with `widget.render((cols,), focus).text` (flow widgets) or
`widget.render((cols, rows), focus).text` (box widgets), as urwid and pudb do.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import urwid

from mambomeme.search.results import Filters, MatchedField, Result
from mambomeme.tui import keys
from mambomeme.tui.preview_widgets import ImageView, PreviewLayout, PreviewPane, metadata_markup

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
__all__ = [  # the preview widgets (preview_widgets.py) are importable from here as before
    "PALETTE", "FilterDialog", "HelpView", "ImageView", "PreviewLayout", "PreviewPane",
    "QueryEdit", "ResultRow", "ResultsList", "StatusBar", "StatusInfo", "highlight",
    "metadata_markup", "query_words", "snippet_field", "status_text",
]  # fmt: skip
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

    def move_to(self, index: int) -> None:
        """Select row `index` (negative counts from the end), clamped to the list."""
        if not self.result_rows:
            return
        count = len(self.result_rows)
        self.walker.set_focus(max(0, min(count - 1, index if index >= 0 else count + index)))

    def select_item(self, item_id: str) -> bool:
        """Select the row showing `item_id`; False when it is not in the list."""
        for position, row in enumerate(self.result_rows):
            if row.result.item_id == item_id:
                self.walker.set_focus(position)
                return True
        return False

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
    hint: str = ""  # shown (dim) when there is no message or error


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
        elif info.message:
            self.message.set_text(("message", info.message))
        else:
            self.message.set_text(("dim", info.hint))
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

        kind = value(self.kind)  # any case, as `mambomeme search --kind`
        return Filters(
            kind=kind.casefold() if kind else None,
            language=value(self.language),
            template=value(self.template),
        )


class HelpView(urwid.WidgetWrap[urwid.Widget]):
    """The key table in a box that fits 80x24: keys in a fixed column, help text wrapped beside
    it, scrolled a row or a page at a time; a footer line says how."""

    KEYS_WIDTH = 18

    def __init__(self) -> None:
        self._rows: list[urwid.Text | urwid.Columns] = []
        for keys_text, text in keys.help_rows():
            if not text:
                self._rows.append(urwid.Text(("label", keys_text)))
            else:
                self._rows.append(
                    urwid.Columns(
                        [(self.KEYS_WIDTH, urwid.Text("  " + keys_text)), urwid.Text(text)]
                    )
                )
        self.offset = 0
        self.page = 10
        self.width = 60
        self.walker: urwid.SimpleListWalker[Any] = urwid.SimpleListWalker(list(self._rows))
        footer = urwid.Text(("dim", "j/k, space/page up: scroll   any other key: close"))
        frame: urwid.Frame[urwid.ListBox[Any], None, urwid.Text] = urwid.Frame(
            urwid.ListBox(self.walker), footer=footer
        )
        super().__init__(urwid.LineBox(frame, title="keys"))

    def render(self, size: tuple[int, ...], focus: bool = False) -> urwid.Canvas:
        if len(size) == 2:
            self.width = max(1, size[0] - 2)  # inside the box's borders
            self.page = max(1, size[1] - 3)  # less the two border rows and the footer
        return super().render(size, focus)

    def last_offset(self) -> int:
        """The first row of the last page: from there on, every remaining row fits."""
        used = 0
        for index in range(len(self._rows) - 1, -1, -1):
            used += self._rows[index].rows((self.width,))
            if used > self.page:
                return index + 1
        return 0

    def scroll(self, step: int) -> None:
        self.offset = max(0, min(self.last_offset(), self.offset + step))
        self.walker[:] = self._rows[self.offset :]
