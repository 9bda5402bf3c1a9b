"""The binding table: consistent, fully implemented, and docs/keys.md generated from it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mambomeme.tui import keys
from mambomeme.tui.app import Controller

ROOT = Path(__file__).resolve().parents[1]


def test_docs_keys_md_is_in_sync_with_the_table() -> None:
    assert (ROOT / "docs" / "keys.md").read_text(encoding="utf-8") == keys.markdown(), (
        "docs/keys.md is stale: run python -m mambomeme.tui.keys"
    )


def test_every_action_has_a_controller_handler() -> None:
    missing = [
        a for a in sorted(keys.ACTIONS) if not callable(getattr(Controller, f"do_{a}", None))
    ]
    assert missing == []


def test_every_binding_is_in_the_help_and_the_docs() -> None:
    help_text = "\n".join(keys.help_lines())
    docs = keys.markdown()
    for binding in keys.BINDINGS:
        assert binding.help in help_text
        for key in binding.keys:
            assert f"`{keys.shown_key(key)}`" in docs


def test_lookup_by_context() -> None:
    assert keys.action_for(keys.QUERY, "enter") == "submit"
    assert keys.action_for(keys.RESULTS, "enter") == "choose"
    assert keys.action_for(keys.RESULTS, "esc") == "quit"
    assert keys.action_for(keys.RESULTS, "q") is None  # typed into the query (fzf's habit)
    assert keys.action_for(keys.QUERY, "q") is None  # typed into the query
    assert keys.action_for(keys.QUERY, "ctrl c") == "quit"  # anywhere
    assert keys.action_for(keys.FILTERS, "enter") == "apply_filters"


def test_table_refuses_duplicates_and_printable_keys_while_typing() -> None:
    dup = keys.BINDINGS + (keys.Binding("quit", ("enter",), keys.RESULTS, "x"),)
    with pytest.raises(ValueError, match="bound twice"):
        keys._check_table(dup)
    typed = (keys.Binding("help", ("h",), keys.ANYWHERE, "x"),)
    with pytest.raises(ValueError, match="typing"):
        keys._check_table(typed)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0] if node.level == 0 else "")
    return names


def test_urwid_is_imported_only_inside_the_tui_package() -> None:
    offenders = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "mambomeme").rglob("*.py")
        if "tui" not in p.relative_to(ROOT / "mambomeme").parts and "urwid" in _imports(p)
    ]
    assert offenders == []


def test_tui_does_not_import_torch_or_sentence_transformers() -> None:
    for path in (ROOT / "mambomeme" / "tui").glob("*.py"):
        assert not _imports(path) & {"torch", "sentence_transformers"}, path
