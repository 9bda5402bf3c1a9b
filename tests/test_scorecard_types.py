"""scorecard.json is written in one place (evaluation/scorecard_types.py): the typed card reads
back every committed scorecard and writes the same bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mambomeme.evaluation.report import _json
from mambomeme.evaluation.scorecard_types import Scorecard

ROOT = Path(__file__).resolve().parents[1]
CARDS = [ROOT / "reports" / "scorecard.json", ROOT / "reports" / "memes-10k" / "scorecard.json"]


@pytest.mark.parametrize("path", CARDS, ids=lambda p: str(p.relative_to(ROOT)))
def test_committed_scorecards_round_trip_byte_for_byte(path: Path) -> None:
    raw = path.read_bytes()
    card = Scorecard.from_json(json.loads(raw))
    assert card.systems and card.acceptance is not None  # the test reads a real card
    assert card.section("rerank_acceptance") is not None and "checks" in card.sections
    assert _json(card.to_json()) == raw


def test_rows_are_typed_and_sections_keep_their_order() -> None:
    card = Scorecard.from_json(json.loads(CARDS[0].read_bytes()))
    hybrid = card.row("hybrid")
    assert hybrid is not None and hybrid.components.value("Q") == hybrid.components.Q
    assert hybrid.mmts_interval is not None and hybrid.gates[0].name == "critical_violation"
    added = card.with_sections(extra={"n": 1})
    assert list(added.to_json())[-1] == "extra" and list(card.to_json())[-1] != "extra"
    assert card.row("no-such-system") is None
    assert card.versions.benchmark.name == card.versions.value("name") == "fixture"
    first = card.differences[0]
    assert (first.system, first.baseline) == ("dense", "bm25") and first.intervals["Q"].resamples
