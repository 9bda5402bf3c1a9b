"""The safety model's extra signals (mambomeme/models/safety/signals.py), their versions in the
model, and the moderation columns ingest writes to items.parquet. Real packages, real files."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from mambomeme.corpus.schema import Item, validate_record
from mambomeme.models.safety import features as sf
from mambomeme.models.safety import model as sm
from mambomeme.models.safety import signals

ROOT = Path(__file__).resolve().parents[1]
KNOWLEDGE = ROOT / "knowledge"


def _item(template: str, text: str = "an ordinary caption") -> Item:
    row = json.loads((ROOT / "fixture" / "items.jsonl").open().readline())
    base = validate_record(row, "items.jsonl:1")
    return dataclasses.replace(base, template=template, title=text, ocr_text=text)


def test_template_risk_columns_follow_the_knowledge_base() -> None:
    risk = signals.template_risk(KNOWLEDGE)
    items = [_item("Insanity Wolf"), _item("Blank Nut Button"), _item("Ghost Roommate"),
             _item("No Such Template Anywhere"), _item("")]  # fmt: skip
    x = signals.matrix(["template_risk"], items, risk)
    assert x.tolist() == [[0, 1], [1, 0], [0, 0], [0, 0], [0, 0]]
    assert signals.column_names(["template_risk"]) == ["template_risk_low", "template_risk_high"]


def test_text_classifiers_score_offensive_words_above_plain_ones() -> None:
    """HateSonar's ONNX graph loads here although the machine has no en_US locale (the graph's
    locale is set to C.UTF-8), and both packages order an insult above a plain caption."""
    items = [_item("", "you stupid worthless bitch, fuck you"), _item("", "a cat on a sofa")]
    x = signals.matrix(["hatesonar", "profanity"], items)
    assert x.shape == (2, 3) and ((x >= 0) & (x <= 1)).all()
    hate, offensive, profanity = x[:, 0], x[:, 1], x[:, 2]
    assert offensive[0] > offensive[1] and profanity[0] > profanity[1]
    assert offensive[0] + hate[0] > 0.5 > offensive[1] + hate[1]
    assert signals.matrix(["hatesonar"], []).shape == (0, 2)


def test_unknown_signal_and_missing_knowledge_are_typed_errors() -> None:
    with pytest.raises(signals.SignalError, match="unknown signal 'vibes'"):
        signals.matrix(["vibes"], [_item("")])
    with pytest.raises(signals.SignalError, match="template_risk"):
        signals.matrix(["template_risk"], [_item("")])
    with pytest.raises(signals.SignalError, match="knowledge"):
        signals.versions(["template_risk"], None)


def _model(names: tuple[str, ...], versions: dict[str, str]) -> sm.SafetyModel:
    width = 4 + len(sf.RULE_CATEGORIES) + 1 + 1 + len(signals.column_names(names))
    weights = np.linspace(-1, 1, width)
    return sm.SafetyModel(weights, 0.1, 1.0, 0.0, 0.5, sf.Priors(0.1, {}), {}, names, versions)


def test_signal_versions_are_verified_at_load(tmp_path: Path) -> None:
    names = ("template_risk", "hatesonar", "profanity")
    here = signals.versions(names, KNOWLEDGE)
    sm.write_model(tmp_path / "ok", _model(names, here), {})
    loaded = sm.load_model(tmp_path / "ok", KNOWLEDGE)
    assert loaded.signals == names and dict(loaded.signal_versions) == here
    stale = dict(here, hatesonar="hatesonar 0.0.1")
    sm.write_model(tmp_path / "stale", _model(names, stale), {})
    with pytest.raises(sm.SafetyModelError, match="signal 'hatesonar' was computed by"):
        sm.load_model(tmp_path / "stale", KNOWLEDGE)
    with pytest.raises(sm.SafetyModelError, match="knowledge"):
        sm.load_model(tmp_path / "ok")  # template risk without the knowledge base


def test_a_feature_version_1_model_loads_as_one_without_signals(tmp_path: Path) -> None:
    raw = _model((), {}).to_json()
    raw["feature_version"] = "safety-features-1"
    del raw["signals"], raw["signal_versions"]
    data = (json.dumps(raw) + "\n").encode("utf-8")
    (tmp_path / sm.MODEL_FILE).write_bytes(data)
    (tmp_path / sm.MANIFEST_FILE).write_text(json.dumps({"model_sha256": sm.sha256_bytes(data)}))
    assert sm.load_model(tmp_path).signals == ()


def test_ingest_writes_template_risk_and_a_null_probability_without_a_model(
    tmp_path: Path,
) -> None:
    from mambomeme.corpus.ingest import PROBABILITY_COLUMN, TEMPLATE_RISK_COLUMN, ingest

    config = {"source": "fixture", "path": str(ROOT / "fixture")}
    ingest("fixture", config, tmp_path / "b", tmp_path / "m.json", True, KNOWLEDGE)
    table = pq.read_table(tmp_path / "b" / "items.parquet").to_pandas()
    assert table[PROBABILITY_COLUMN].isna().all()
    with_template = table[table["template"] != ""]
    assert len(with_template) > 100 and set(with_template[TEMPLATE_RISK_COLUMN]) <= {
        "none", "low", "high",
    }  # fmt: skip
    cena = table[table["id"] == "fx:tpl-john-cena"].iloc[0]
    assert cena[TEMPLATE_RISK_COLUMN] == "none"


def test_batched_scores_equal_one_call_per_text() -> None:
    """Texts are scored in batches of signals.BATCH; a text's score does not depend on its
    batch."""
    texts = [f"caption number {n} you idiot" if n % 7 == 0 else f"a dog number {n}"
             for n in range(signals.BATCH + 5)]  # fmt: skip
    items = [_item("", t) for t in texts]
    together = signals.matrix(["hatesonar", "profanity"], items)
    last = signals.matrix(["hatesonar", "profanity"], items[-1:])
    assert together.shape == (len(texts), 3)
    assert np.allclose(together[-1], last[0]) and not np.allclose(together[0], together[1])


def test_holdout_average_precision_is_the_textbook_formula() -> None:
    """Ranked a(unsafe, 0.9) b(safe, 0.8) c(unsafe, 0.7) d(safe, 0.1): precision at each unsafe
    item is 1/1 and 2/3, so AP = (1 + 2 / 3) / 2."""
    from mambomeme.moderation.holdout import average_precision
    from mambomeme.moderation.labels import LabelRow

    rows = [LabelRow(i, s, "", "f", "train") for i, s in
            (("a", "unsafe"), ("b", "safe"), ("c", "unsafe"), ("d", "safe"))]  # fmt: skip
    p = {"a": 0.9, "b": 0.8, "c": 0.7, "d": 0.1}
    assert average_precision(p, rows) == round((1 + 2 / 3) / 2, 4)
