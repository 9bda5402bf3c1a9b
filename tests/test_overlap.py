"""Content-word overlap (evaluation/overlap.py) and the overlap report on committed benchmarks."""

from __future__ import annotations

from pathlib import Path

from mambomeme.corpus.knowledge import load_knowledge
from mambomeme.evaluation.overlap import content_words, share, shared_words
from mambomeme.evaluation.overlap_report import measure_benchmark, query_targets, render_markdown

ROOT = Path(__file__).resolve().parents[1]


def test_content_words_drop_stop_words_short_tokens_and_fold_plurals() -> None:
    assert content_words("When the cats DON'T see me, lol") == {"cat", "dont", "see", "lol"}
    assert content_words("a to of") == frozenset()
    assert content_words("puppies' parties") == {"puppy", "party"}


def test_shared_words_and_share() -> None:
    assert shared_words(["girl smiling at fire"], ["Disaster Girl", "fires"]) == {"girl", "fire"}
    assert share(["girl smiling at fire"], ["Disaster Girl"]) == 1 / 3
    assert share(["the a of"], ["anything"]) is None
    assert share(["pretending invisible"], ["You can't see me"]) == 0.0


def test_query_targets_read_gold_and_exact_targets() -> None:
    targets = query_targets(ROOT / "benchmarks" / "dev-v2")
    assert targets["d2-concept-01"] == ["imgflip-template:Awkward-Moment-Sealion", "memegen:ams"]
    assert targets["d2-entity-01"] == ["imgflip-template:Am-I-The-Only-One-Around-Here"]


def test_report_on_the_fixture_benchmark(fixture_build: Path) -> None:
    """Fixture entity queries name templates, so their knowledge share is high; the report
    counts only answerable queries and renders every slice."""
    from mambomeme.search.items import ItemTable

    items = ItemTable(fixture_build)
    report = measure_benchmark(
        ROOT / "benchmarks" / "fixture", items, load_knowledge(ROOT / "knowledge")
    )
    entity = report["entity"]["knowledge"]
    assert entity["n"] >= 3 and entity["median"] >= 0.5
    answerable = sum(
        1
        for line in (ROOT / "benchmarks/fixture/queries.jsonl").read_text().splitlines()
        if '"answerable": true' in line
    )
    assert sum(report[s]["caption"]["n"] for s in report) <= answerable
    text = render_markdown({"benchmarks": {"fixture": report}})
    assert "| concept |" in text and "## Caption share" in text
