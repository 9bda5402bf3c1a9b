"""The one key-binding table of the TUI; the help screen and docs/keys.md are generated from it.

A binding maps urwid key names to an action in a context: "query" (typing in the query line),
"empty query" (the query line while it is empty: the query bindings apply there too, and a
printable key such as `q` may act because there is no text it could be part of), "results"
(browsing the list), "filters" (the filter dialog), "help" (the help screen) or "anywhere". The
controller looks every key up here first (`action_for`), so the table is the only place a key is
defined; keys that are not bound fall through to the focused widget (typing, cursor movement in
the query line). In the results, a printable key that is not bound there moves to the query line
and is typed (fzf's habit): only the letters in this table act on the list, and none of them
quits (`esc` does), so a word typed after a search never leaves the app.

The hint line names bound keys only and follows the focus (`hint_line(situation)`): one hint per
situation in HINTS, each checked against the table at import.

Regenerate the docs after changing the table:  python -m mambomeme.tui.keys
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NamedTuple

QUERY = "query"
EMPTY_QUERY = "empty query"
RESULTS = "results"
FILTERS = "filters"
HELP = "help"
ANYWHERE = "anywhere"
CONTEXTS = (ANYWHERE, QUERY, EMPTY_QUERY, RESULTS, FILTERS, HELP)

DOCS_PATH = Path(__file__).resolve().parents[2] / "docs" / "keys.md"


class Binding(NamedTuple):
    action: str
    keys: tuple[str, ...]
    context: str
    help: str


BINDINGS: tuple[Binding, ...] = (
    Binding("submit", ("enter",), QUERY, "search for the query; alternate cues separated by |"),
    Binding("clear_query", ("ctrl u",), QUERY, "clear the query line"),
    Binding("next", ("ctrl n",), QUERY, "next result, without leaving the query line"),
    Binding("previous", ("ctrl p",), QUERY, "previous result, without leaving the query line"),
    Binding("quit", ("esc",), QUERY, "quit (in a dialog or the help, esc closes it)"),
    Binding("help", ("?",), EMPTY_QUERY, "show this help (with text, ? is typed)"),
    Binding("quit", ("q",), EMPTY_QUERY, "quit (with text, q is typed)"),
    Binding("toggle_focus", ("tab",), ANYWHERE, "switch between the query line and the results"),
    Binding("focus_query", ("/",), RESULTS, "edit the query"),
    Binding("next", ("down", "j", "ctrl n"), RESULTS, "next result"),
    Binding("previous", ("up", "k", "ctrl p"), RESULTS, "previous result"),
    Binding("first", ("g", "home"), RESULTS, "first result"),
    Binding("last", ("G", "end"), RESULTS, "last result"),
    Binding(
        "choose", ("enter",), RESULTS, "choose the result (with --print-choice: print and exit)"
    ),
    Binding("open", ("o",), RESULTS, "open the image in the system viewer"),
    Binding("copy_path", ("y",), RESULTS, "copy the image path to the clipboard"),
    Binding("copy_image", ("Y",), RESULTS, "copy the image itself where the clipboard supports it"),
    Binding("cycle_kind", ("t",), RESULTS, "filter by kind: any, template, meme"),
    Binding("filters", ("f",), RESULTS, "edit the filters (kind, language, template)"),
    Binding("filters", ("ctrl f",), ANYWHERE, "edit the filters (kind, language, template)"),
    Binding("apply_filters", ("enter",), FILTERS, "apply the filters and search again"),
    Binding("cancel", ("esc",), FILTERS, "close the dialog without changes"),
    Binding(
        "toggle_preview",
        ("p",),
        RESULTS,
        "show or hide the preview (beside the list from 90 columns, else full screen)",
    ),
    Binding("details_down", ("J", "shift down"), RESULTS, "scroll the details pane down"),
    Binding("details_up", ("K", "shift up"), RESULTS, "scroll the details pane up"),
    # a control key: a word typed while the results have the focus must never opt in to logging
    Binding(
        "toggle_feedback",
        ("ctrl o",),
        RESULTS,
        "turn local interaction feedback on or off (a control key: no typed letter does it)",
    ),
    Binding("help", ("?",), RESULTS, "show this help"),
    Binding("help", ("f1",), ANYWHERE, "show or close this help"),
    Binding("help_down", ("down", "j", "ctrl n"), HELP, "scroll the help down"),
    Binding("help_up", ("up", "k", "ctrl p"), HELP, "scroll the help up"),
    Binding("help_page_down", ("page down", " "), HELP, "scroll the help a page down"),
    Binding("help_page_up", ("page up",), HELP, "scroll the help a page up"),
    Binding("close_help", ("esc", "q", "?", "enter"), HELP, "close the help (any other key too)"),
    Binding("quit", ("esc",), RESULTS, "quit (q and other unbound letters are typed)"),
    Binding("quit", ("ctrl c",), ANYWHERE, "quit"),
)

# the hint line per situation: (action, key, label); each key must be bound to its action in the
# situation's context. "first": an empty query line with no results (the first screen);
# "query"/"empty+results"/"query+results": the query line with or without text and results;
# "results": the list has the focus; "preview": the full-screen preview of a narrow terminal.
Hint = tuple[tuple[str, str, str], ...]
HINTS: dict[str, tuple[str, Hint]] = {
    "first": (
        EMPTY_QUERY,
        (
            ("submit", "enter", "search"),
            ("filters", "ctrl f", "filters"),
            ("help", "?", "help"),
            ("quit", "esc", "quit"),
        ),
    ),
    "query": (
        QUERY,
        (
            ("submit", "enter", "search"),
            ("clear_query", "ctrl u", "clear"),
            ("filters", "ctrl f", "filters"),
            ("help", "f1", "help"),
            ("quit", "esc", "quit"),
        ),
    ),
    "empty+results": (
        EMPTY_QUERY,
        (
            ("submit", "enter", "search"),
            ("next", "ctrl n", "next"),
            ("previous", "ctrl p", "prev"),
            ("toggle_focus", "tab", "results"),
            ("help", "?", "help"),
            ("quit", "esc", "quit"),
        ),
    ),
    "query+results": (
        QUERY,
        (
            ("submit", "enter", "search"),
            ("next", "ctrl n", "next"),
            ("previous", "ctrl p", "prev"),
            ("toggle_focus", "tab", "results"),
            ("help", "f1", "help"),
            ("quit", "esc", "quit"),
        ),
    ),
    "results": (
        RESULTS,
        (
            ("next", "j", "next"),
            ("previous", "k", "prev"),
            ("choose", "enter", "choose"),
            ("open", "o", "open"),
            ("copy_path", "y", "copy"),
            ("toggle_preview", "p", "preview"),
            ("focus_query", "/", "query"),
            ("quit", "esc", "quit"),
        ),
    ),
    "preview": (
        RESULTS,
        (
            ("toggle_preview", "p", "list"),
            ("next", "j", "next"),
            ("previous", "k", "prev"),
            ("details_down", "J", "scroll"),
            ("open", "o", "open"),
            ("choose", "enter", "choose"),
            ("quit", "esc", "quit"),
        ),
    ),
}
HINT = HINTS["first"][1]  # the first screen's hint

ACTIONS = frozenset(b.action for b in BINDINGS)


def _check_table(bindings: tuple[Binding, ...]) -> dict[tuple[str, str], str]:
    """Index the table by (context, key), refusing a key bound twice where both would apply."""
    index: dict[tuple[str, str], str] = {}
    for binding in bindings:
        if binding.context not in CONTEXTS:
            raise ValueError(f"binding {binding.action}: unknown context {binding.context!r}")
        for key in binding.keys:
            contexts = _applies_in(binding.context)
            for context in contexts:
                if len(key) == 1 and context == QUERY:
                    raise ValueError(f"key {key!r} would stop typing it in the query line")
                if (context, key) in index:
                    raise ValueError(f"key {key!r} bound twice in context {context!r}")
                index[(context, key)] = binding.action
    return index


def _applies_in(context: str) -> tuple[str, ...]:
    """Where a binding of `context` applies: anywhere is every context, query includes empty."""
    if context == ANYWHERE:
        return CONTEXTS[1:]
    if context == QUERY:
        return (QUERY, EMPTY_QUERY)
    return (context,)


def _check_hints(index: dict[tuple[str, str], str]) -> None:
    for situation, (context, hint) in HINTS.items():
        for action, key, _label in hint:
            if index.get((context, key)) != action:
                raise ValueError(f"hint {situation}: key {key!r} is not bound to {action!r}")
        if len(hint_line(situation)) > 80:
            raise ValueError(f"hint {situation}: longer than 80 columns")


_INDEX = _check_table(BINDINGS)


def action_for(context: str, key: str) -> str | None:
    """The action bound to `key` in `context` (an ANYWHERE binding applies in every context)."""
    return _INDEX.get((context, key))


def hint_line(situation: str = "first") -> str:
    """The one-line key hint of a situation in HINTS (the first screen by default; 80 columns)."""
    return "  ".join(f"{key} {label}" for _action, key, label in HINTS[situation][1])


_check_hints(_INDEX)


def help_rows() -> list[tuple[str, str]]:
    """(keys, help) per binding grouped by context in table order; a context heading has help ""."""
    rows: list[tuple[str, str]] = []
    for context in CONTEXTS:
        bindings = [b for b in BINDINGS if b.context == context]
        if not bindings:
            continue
        rows.append((f"{context}:", ""))
        rows.extend((", ".join(shown_key(k) for k in b.keys), b.help) for b in bindings)
    return rows


def shown_key(key: str) -> str:
    return "space" if key == " " else key


def help_lines() -> list[str]:
    """Plain-text help, one line per binding, grouped by context in table order."""
    return [keys if not text else f"  {keys:<16} {text}" for keys, text in help_rows()]


def markdown() -> str:
    """The README/docs key list as a Markdown table (docs/keys.md is exactly this text)."""
    out = [
        "# MamboMeme TUI keys",
        "",
        "Generated from `mambomeme/tui/keys.py` by `python -m mambomeme.tui.keys`; do not edit.",
        "",
        "| keys | where | action |",
        "| --- | --- | --- |",
    ]
    for b in BINDINGS:
        keys = ", ".join(f"`{shown_key(k)}`" for k in b.keys)
        out.append(f"| {keys} | {b.context} | {b.help.replace('|', chr(92) + '|')} |")
    return "\n".join(out) + "\n"


def write_docs(path: Path = DOCS_PATH) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(markdown(), encoding="utf-8")
    return path


if __name__ == "__main__":
    sys.stdout.write(f"wrote {write_docs()}\n")
