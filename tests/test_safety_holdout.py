"""Moderation on unseen families (mambomeme/moderation/holdout.py) and the in-memory
reclassification it measures with. Real model, real fixture build, real files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mambomeme.corpus.safety import load_classifier
from mambomeme.corpus.schema import Item, validate_record
from mambomeme.evaluation.benchmark import load_benchmark
from mambomeme.models.safety import features as sf
from mambomeme.moderation import holdout
from mambomeme.moderation.labels import LabelRow

ROOT = Path(__file__).resolve().parents[1]
HEROIN = "fx:conspiracy-keanu-unsafe-heroin"

pytestmark = pytest.mark.slow


def _fixture_items() -> dict[str, Item]:
    rows = [json.loads(line) for line in (ROOT / "fixture" / "items.jsonl").open()]
    items = [validate_record(r, f"items.jsonl:{n}") for n, r in enumerate(rows, 1)]
    return {it.id: it for it in items}


def _rows(items: dict[str, Item], flip: str | None = None) -> list[LabelRow]:
    """The fixture items' own classes as labels, one family per template group; `flip`
    inverts the labels of that family only."""
    out = []
    for it in items.values():
        unsafe = it.safety == "unsafe"
        if it.template_group == flip:
            unsafe = not unsafe
        safety = "unsafe" if unsafe else "safe"
        out.append(LabelRow(it.id, safety, "1" if unsafe else "", it.template_group, "train"))
    return out


@pytest.fixture(scope="module")
def embed() -> Any:
    from mambomeme.index.dense import Encoder

    encoder = Encoder("cpu", sf.MAX_SEQ_LENGTH)
    return lambda texts: encoder.encode(texts, batch_size=32)


def test_cross_fitting_never_uses_the_scored_familys_labels(embed: Any) -> None:
    items = _fixture_items()
    rules = load_classifier()
    family = items[HEROIN].template_group
    rows = _rows(items)
    first, hits = holdout.cross_fitted(rows, items, rules, embed, 1.0, 7, 3)
    again, _ = holdout.cross_fitted(rows, items, rules, embed, 1.0, 7, 3)
    assert first == again  # deterministic for a seed
    flipped, _ = holdout.cross_fitted(_rows(items, flip=family), items, rules, embed, 1.0, 7, 3)
    own = [r.item_id for r in rows if r.family == family]
    # its own probabilities come from a model fitted without it: its labels cannot move them
    assert [flipped[i] for i in own] == pytest.approx([first[i] for i in own], abs=1e-12)
    others = [r.item_id for r in rows if r.family != family]
    assert any(abs(flipped[i] - first[i]) > 1e-9 for i in others)  # other folds did change
    assert hits[HEROIN] is True  # "heroin" is a lexicon word
    classes = holdout.blind_classes(first, hits, threshold=2.0)  # a threshold no p reaches
    assert classes[holdout.BLIND[0]] == classes[holdout.BLIND[1]]
    assert classes[holdout.BLIND[1]][HEROIN] == "unsafe"


def test_reclassify_moves_an_item_in_and_out_of_the_mask(
    fixture_build: Path, params: dict[str, Any]
) -> None:
    from mambomeme.search.engine import Engine

    engine = Engine.open(fixture_build, params)  # its own engine: reclassify changes it
    row = engine.items.row_of[HEROIN]
    assert not engine.items.static_mask[row]

    def found() -> bool:
        response = engine.search(["heroin is a hug"], limit=10, system="bm25")
        return HEROIN in [r.item_id for r in response.results]

    assert not found()
    engine.items.reclassify({HEROIN: "safe"})
    assert engine.items.static_mask[row] and engine.items[HEROIN].safety == "safe"
    assert found()
    engine.items.reclassify({HEROIN: "unsafe"})
    assert not engine.items.static_mask[row] and not found()
    with pytest.raises(ValueError, match="fx:nope"):
        engine.items.reclassify({"fx:nope": "safe"})
    with pytest.raises(ValueError, match="maybe"):
        engine.items.reclassify({HEROIN: "maybe"})


def test_measure_judges_lists_by_the_human_labels(
    fixture_build: Path, params: dict[str, Any]
) -> None:
    from mambomeme.search.engine import Engine

    engine = Engine.open(fixture_build, params)
    benchmark = load_benchmark(ROOT / "benchmarks" / "fixture")
    truth = dict(benchmark.safety)
    served = holdout.measure(engine, benchmark, "bm25", None, truth)
    assert served["lists_with_unsafe"] == 0 and served["queries"] == len(benchmark.queries)
    unsafe = [i for i, it in _fixture_items().items() if it.safety == "unsafe"]
    shown = holdout.measure(engine, benchmark, "bm25", dict.fromkeys(unsafe, "safe"), truth)
    assert shown["unsafe_items_shown"] > 0 and shown["lists_with_unsafe"] > 0
    assert shown["safe_list_ordinary"] < 1.0 or shown["safe_list_safety"] < 1.0


def test_annotator_ceiling_counts_each_pass_against_the_final_labels(tmp_path: Path) -> None:
    ids = ["a:1", "a:2", "a:3", "a:4"]
    final = [
        LabelRow("a:1", "unsafe", "1", "f1", "test"),
        LabelRow("a:2", "unsafe", "3", "f1", "test"),
        LabelRow("a:3", "safe", "", "f2", "train"),
        LabelRow("a:4", "safe", "", "f2", "train"),
    ]
    votes = {
        "annotator-a": ["unsafe", "safe", "unsafe", "safe"],  # 1 of 2 unsafe, 1 false alarm
        "annotator-b": ["unsafe", "unsafe", "safe", "safe"],
    }
    sheets = {}
    for annotator, labels in votes.items():
        sheet = f"{annotator}-part-1"
        sheets[sheet] = ids
        lines = ["item_id,safety,category,note"]
        for item_id, label in zip(ids, labels, strict=True):
            lines.append(f"{item_id},{label},{'1' if label == 'unsafe' else ''},")
        (tmp_path / f"{sheet}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "assignment.json").write_text(json.dumps({"sheets": sheets}), encoding="utf-8")
    ceiling = holdout.annotator_ceiling([tmp_path], final)
    assert ceiling["annotator-a"]["all"] == {"items": 4, "recall": 0.5, "precision": 0.5}
    assert ceiling["annotator-b"]["test"] == {"items": 2, "recall": 1.0, "precision": 1.0}
    page = holdout.report_markdown(
        {
            "corpus": "fixture", "benchmark": "fixture", "folds": 3, "c": 1.0,
            "threshold": 0.2, "system": "bm25", "queries": 0,
            "classification": {
                name: holdout.classification_figures(
                    {r.item_id: r.safety for r in final}, final
                )
                for name in holdout.BLIND
            },
            "lists": {}, "annotator_ceiling": ceiling,
        }
    )  # fmt: skip
    assert "| annotator-b | 0.000 / 0.000 | 0.000 / 0.000 | 1.000 / 1.000 | 1.000 / 1.000 |" in page
