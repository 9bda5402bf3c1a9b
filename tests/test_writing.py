"""The query writer's checker (evaluation/writing.py): every QUERY-WRITING.md rule it enforces."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mambomeme.evaluation.writing import check_file, check_line

TARGETS: dict[str, dict[str, Any]] = {
    "fx:cena-tpl": {"family": "template:john-cena", "kind": "template", "title": "John Cena",
                    "template": "John Cena", "text": ""},
    "fx:cena-01": {"family": "template:john-cena", "kind": "meme", "title": "John Cena",
                   "template": "John Cena", "text": "you can't see me"},
    "fx:kermit-01": {"family": "template:evil-kermit", "kind": "meme", "title": "Evil Kermit",
                     "template": "Evil Kermit", "text": "me: eat healthy / also me: pizza"},
}  # fmt: skip


def _line(**overrides: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "qid": "w-concept-01", "family": "template:john-cena", "slice": "concept",
        "text": "pretending nobody notices you", "subsets": [], "answerable": True,
        "gold": ["fx:cena-tpl", "fx:cena-01"], "rationale": "the invisible wrestler",
    }  # fmt: skip
    row.update(overrides)
    return row


def test_a_clean_concept_query_passes() -> None:
    assert check_line(_line(), TARGETS) == []


def test_concept_query_sharing_a_caption_word_is_rejected() -> None:
    problems = check_line(_line(text="wrestler you cannot see"), TARGETS)
    assert len(problems) == 1 and "['see']" in problems[0]
    cue = check_line(_line(cues=["john"], subsets=["multi_cue"]), TARGETS)
    assert any("['john']" in p for p in cue)


def test_structural_rules() -> None:
    assert any("at least 2 gold" in p for p in check_line(_line(gold=["fx:cena-01"]), TARGETS))
    assert any(
        "not a dev item" in p for p in check_line(_line(gold=["x:1", "fx:cena-01"]), TARGETS)
    )
    entity = _line(slice="entity", text="john cena")
    assert any("exact_targets" in p for p in check_line(entity, TARGETS))
    filtered = _line(filters={"kind": "template"}, subsets=["filter"])
    assert any("are not templates" in p for p in check_line(filtered, TARGETS))
    assert any("multi_cue" in p for p in check_line(_line(cues=["x y"]), TARGETS))
    nomatch = _line(answerable=False, gold=[], hard_negatives=["fx:kermit-01"], audit="short")
    assert any("audit" in p for p in check_line(nomatch, TARGETS))


def test_check_file_counts_repeats_and_template_cap(tmp_path: Path) -> None:
    rows = [_line(qid=f"w-concept-{n}", text=f"pretending nobody notices {w}")
            for n, w in enumerate(["alpha", "bravo", "charlie", "delta"])]  # fmt: skip
    rows.append(_line(qid="w-concept-0", text="hiding in plain sight"))
    path = tmp_path / "queries.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n{broken\n")
    problems = check_file(path, TARGETS, ["Hiding in  plain sight"])
    assert any("repeated" in p for p in problems)
    assert any("targeted 5 times" in p for p in problems)
    assert any("earlier version" in p for p in problems)
    assert any(":6: invalid JSON" in p for p in problems)


def test_packet_rows_keep_a_line_separator_inside_a_caption(tmp_path: Path) -> None:
    """A caption holding U+2028 (legal in JSON) must not split its record (str.splitlines
    would): a writer hit this on a real caption."""
    from mambomeme.evaluation.writing import read_rendered

    path = tmp_path / "corpus-targets.jsonl"
    rows = [{"id": "fx:a", "text": "top\u2028bottom"}, {"id": "fx:b", "text": "x"}]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    assert read_rendered(path)["fx:a"]["text"] == "top\u2028bottom"
