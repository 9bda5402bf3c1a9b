"""The one key-binding table of the TUI; the help screen and docs/keys.md are generated from it.

A binding maps urwid key names to an action in a context: "query" (typing in the query line),
"results" (browsing the list), "filters" (the filter dialog) or "anywhere". The controller looks
every key up here first (`action_for`), so the table is the only place a key is defined; keys that
are not bound fall through to the focused widget (typing, cursor movement in the query line).

Regenerate the docs after changing the table:  python -m mambomeme.tui.keys
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NamedTuple

QUERY = "query"
RESULTS = "results"
FILTERS = "filters"
ANYWHERE = "anywhere"
CONTEXTS = (ANYWHERE, QUERY, RESULTS, FILTERS)

DOCS_PATH = Path(__file__).resolve().parents[2] / "docs" / "keys.md"


class Binding(NamedTuple):
    action: str
    keys: tuple[str, ...]
    context: str
    help: str


BINDINGS: tuple[Binding, ...] = (
    Binding("submit", ("enter",), QUERY, "search for the query; alternate cues separated by |"),
    Binding("clear_query", ("ctrl u",), QUERY, "clear the query line"),
    Binding("toggle_focus", ("tab",), ANYWHERE, "switch between the query line and the results"),
    Binding("focus_query", ("/",), RESULTS, "edit the query"),
    Binding("next", ("down", "j"), RESULTS, "next result"),
    Binding("previous", ("up", "k"), RESULTS, "previous result"),
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
    Binding("toggle_preview", ("p",), RESULTS, "show or hide the preview pane"),
    # a control key: a word typed while the results have the focus must never opt in to logging
    Binding(
        "toggle_feedback",
        ("ctrl o",),
        RESULTS,
        "turn local interaction feedback on or off (a control key: no typed letter does it)",
    ),
    Binding("help", ("?",), RESULTS, "show this help (any key closes it)"),
    Binding("help", ("f1",), ANYWHERE, "show this help (any key closes it)"),
    Binding("quit", ("q",), RESULTS, "quit"),
    Binding("quit", ("ctrl c",), ANYWHERE, "quit"),
)

ACTIONS = frozenset(b.action for b in BINDINGS)


def _check_table(bindings: tuple[Binding, ...]) -> dict[tuple[str, str], str]:
    """Index the table by (context, key), refusing a key bound twice where both would apply."""
    index: dict[tuple[str, str], str] = {}
    for binding in bindings:
        if binding.context not in CONTEXTS:
            raise ValueError(f"binding {binding.action}: unknown context {binding.context!r}")
        for key in binding.keys:
            contexts = CONTEXTS[1:] if binding.context == ANYWHERE else (binding.context,)
            for context in contexts:
                if len(key) == 1 and context == QUERY:
                    raise ValueError(f"key {key!r} would stop typing it in the query line")
                if (context, key) in index:
                    raise ValueError(f"key {key!r} bound twice in context {context!r}")
                index[(context, key)] = binding.action
    return index


_INDEX = _check_table(BINDINGS)


def action_for(context: str, key: str) -> str | None:
    """The action bound to `key` in `context` (an ANYWHERE binding applies in every context)."""
    return _INDEX.get((context, key))


def help_lines() -> list[str]:
    """Plain-text help, one line per binding, grouped by context in table order."""
    lines: list[str] = []
    for context in CONTEXTS:
        rows = [b for b in BINDINGS if b.context == context]
        if not rows:
            continue
        lines.append(f"{context}:")
        for b in rows:
            lines.append(f"  {', '.join(b.keys):<16} {b.help}")
    return lines


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
        keys = ", ".join(f"`{k}`" for k in b.keys)
        out.append(f"| {keys} | {b.context} | {b.help.replace('|', chr(92) + '|')} |")
    return "\n".join(out) + "\n"


def write_docs(path: Path = DOCS_PATH) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(markdown(), encoding="utf-8")
    return path


if __name__ == "__main__":
    sys.stdout.write(f"wrote {write_docs()}\n")
