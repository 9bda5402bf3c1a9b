"""The learned safety model (mambomeme/moderation): training, manifest, applying it after the
rules, the review round trip, and the frozen labels' families. Real model, real files."""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mambomeme.corpus.safety import load_classifier
from mambomeme.corpus.schema import Item, validate_record
from mambomeme.errors import BenchmarkError
from mambomeme.models.safety import features as sf
from mambomeme.models.safety import model as sm
from mambomeme.models.safety import train as st
from mambomeme.moderation import labels as lab
from mambomeme.moderation import review

ROOT = Path(__file__).resolve().parents[1]
FAMILIES = ROOT / ".." / "shared" / "benchmark" / "families.csv"
DOXX = "fx:monkey-puppet-unsafe-doxx"  # unsafe by the policy (category 6), no lexicon word

pytestmark = pytest.mark.slow


def _fixture_items() -> list[Item]:
    rows = [json.loads(line) for line in (ROOT / "fixture" / "items.jsonl").open()]
    return [validate_record(r, f"items.jsonl:{n}") for n, r in enumerate(rows, 1)]


def _synthetic(n: int, text: str) -> Item:
    base = next(it for it in _fixture_items() if it.id == DOXX)
    return dataclasses.replace(base, id=f"fx:synthetic-{n}", title=text, ocr_text=text)


@pytest.fixture(scope="module")
def embed() -> Any:
    from mambomeme.index.dense import Encoder

    encoder = Encoder("cpu", sf.MAX_SEQ_LENGTH)
    return lambda texts: encoder.encode(texts, batch_size=32)


@pytest.fixture(scope="module")
def trained(embed: Any) -> tuple[sm.SafetyModel, list[Item]]:
    """A tiny model: fixture items (their hand labels) plus a few doxxing captions, without
    the doxxing item itself, which it must then catch."""
    doxx = [
        "posting my neighbour's home address and phone number so everyone can visit her",
        "here is where that girl from class lives, her address and her parents' numbers",
        "found his real name, workplace and house, sharing it with the whole internet",
        "leaked this random woman's private photos and her address lol",
    ]
    items = [it for it in _fixture_items() if it.id != DOXX]
    items += [dataclasses.replace(_synthetic(n, t), safety="unsafe") for n, t in enumerate(doxx)]
    return _train(items, embed), items


def _train(items: list[Item], embed: Any, seed: int = 7) -> sm.SafetyModel:
    rules = load_classifier()
    x = sf.feature_matrix(
        embed([sf.safety_document(it) for it in items]),
        np.vstack([sf.rule_features(it, rules) for it in items]),
        np.zeros(len(items)),
    )
    y = np.asarray([int(it.safety == "unsafe") for it in items])
    hit = x[:, -2] > 0
    priors = sf.Priors.fit([it.template_group for it in items], y)
    model, _ = st.train(x, y, [it.template_group for it in items], x, y, hit, priors, seed,
                        [10.0], 2, 1.0)  # fmt: skip
    return model


def test_training_is_deterministic_for_a_seed(trained: Any, embed: Any) -> None:
    model, items = trained
    again = _train(items, embed)
    assert json.dumps(model.to_json()) == json.dumps(again.to_json())


def test_model_masks_an_item_the_lexicon_misses(trained: Any, embed: Any) -> None:
    model, _ = trained
    rules = load_classifier()
    doxx = next(it for it in _fixture_items() if it.id == DOXX)
    as_rules_saw_it = dataclasses.replace(doxx, safety="safe")
    assert (
        rules.classify(doxx.title, doxx.ocr_text, doxx.meaning, doxx.visual_description).safety
        == "safe"
    )
    applied = sm.apply(model, [as_rules_saw_it], rules, embed)
    assert applied.items[0].safety == "unsafe" and applied.flagged_by_model == [DOXX]


def test_override_wins_and_a_lexicon_hit_stays_unsafe(trained: Any, embed: Any) -> None:
    model, _ = trained
    rules = load_classifier()
    doxx = dataclasses.replace(next(it for it in _fixture_items() if it.id == DOXX), safety="safe")
    rules.overrides[DOXX] = ("safe", "test: a reviewer said safe")  # a private instance
    assert sm.apply(model, [doxx], rules, embed).items[0].safety == "safe"
    lexicon_hit = next(
        it for it in _fixture_items() if it.id == "fx:conspiracy-keanu-unsafe-heroin"
    )
    never = dataclasses.replace(model, threshold=2.0)  # the model alone flags nothing
    assert sm.apply(never, [lexicon_hit], rules, embed).items[0].safety == "unsafe"


def test_manifest_is_verified_at_load(trained: Any, tmp_path: Path) -> None:
    model, _ = trained
    sm.write_model(tmp_path / "m", model, {"labels": {"sha256": "x"}})
    loaded = sm.load_model(tmp_path / "m")
    assert loaded.threshold == model.threshold
    path = tmp_path / "m" / sm.MODEL_FILE
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(sm.SafetyModelError, match="model.json"):
        sm.load_model(tmp_path / "m")


def test_ingest_applies_a_configured_model(trained: Any, tmp_path: Path) -> None:
    """The stage's reclassify step marks the item unsafe and the manifest says so."""
    from mambomeme.corpus.ingest import ingest
    from mambomeme.moderation.apply import model_reclassifier

    model, _ = trained
    sm.write_model(tmp_path / "model", model, {"labels": {"sha256": "x"}})
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    rows = [json.loads(line) for line in (ROOT / "fixture" / "items.jsonl").open()]
    for row in rows:
        if row["id"] == DOXX:
            row["safety"] = "safe"  # as if only the rules had looked at it
    (corpus / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    params = {
        "ingest": {"safety": {"model": str(tmp_path / "model")}},
        "dense": {"cache_dir": "", "batch_size": 32, "device": "cpu", "shard_size": 1000},
    }
    config = {"source": "fixture", "path": str(corpus)}
    result = ingest("t", config, tmp_path / "b", tmp_path / "m.json", True, ROOT / "knowledge",
                    model_reclassifier(params, config))  # fmt: skip
    assert next(it for it in result.items if it.id == DOXX).safety == "unsafe"
    assert result.manifest["safety_model"]["applied"] is True
    assert result.manifest["safety_model"]["flagged_by_model"] >= 1
    import pyarrow.parquet as pq

    from mambomeme.corpus.ingest import PROBABILITY_COLUMN

    table = pq.read_table(tmp_path / "b" / "items.parquet").to_pandas().set_index("id")
    p = table[PROBABILITY_COLUMN]
    assert p.notna().all() and ((p >= 0) & (p <= 1)).all() and p.nunique() > 10
    assert p[DOXX] >= model.threshold  # the probability that masked it is the one served


def test_review_round_trip(tmp_path: Path) -> None:
    items = _fixture_items()[:6]
    probabilities = {it.id: 0.5 + 0.01 * n for n, it in enumerate(items)}
    chosen = review.queue(items, probabilities, 0.5, 0.035, 10, skip={items[0].id})
    assert [it.id for it in chosen] == [items[1].id, items[2].id, items[3].id]
    sheet = tmp_path / "queue"
    review.write_queue(sheet, chosen)
    families = {it.id: lab.item_family(it.template_group) for it in items}
    old = tmp_path / "labels" / "v1"
    lab.freeze(old, {"labels.tsv": lab.labels_tsv(
        {items[0].id: lab.SafetyLabel(items[0].id, "safe", "")}, families, 1)})  # fmt: skip
    before = (old / "labels.tsv").read_bytes()
    overrides = tmp_path / "overrides.csv"
    overrides.write_text(f"item_id,safety,reason\n{items[1].id},unsafe,earlier verdict\n")
    bad = tmp_path / "bad.csv"
    bad.write_text(f"item_id,safety,category,note\n{items[1].id},unsafe,,\n")
    with pytest.raises(BenchmarkError, match=r"bad.csv: row 2"):
        review.import_verdicts(bad, sheet, old, tmp_path / "labels" / "v2", overrides,
                               families, 1, "r1")  # fmt: skip
    assert not (tmp_path / "labels" / "v2").exists()
    good = tmp_path / "verdicts.csv"
    good.write_text(
        "item_id,safety,category,note\n"
        f"{items[1].id},safe,,\n{items[2].id},unsafe,3,\n{items[3].id},safe,,\n"
    )
    done = review.import_verdicts(good, sheet, old, tmp_path / "labels" / "v2", overrides,
                                  families, 1, "r1")  # fmt: skip
    assert (done.overrides_added, done.overrides_kept, done.labels_added) == (2, 1, 3)
    assert (old / "labels.tsv").read_bytes() == before
    rows = list(csv.DictReader(overrides.open()))
    assert rows[0] == {"item_id": items[1].id, "safety": "unsafe", "reason": "earlier verdict"}
    assert len(rows) == 3
    assert len(lab.read_labels_tsv(tmp_path / "labels" / "v2" / "labels.tsv")) == 4
    with pytest.raises(BenchmarkError, match="never overwritten"):
        review.import_verdicts(good, sheet, old, tmp_path / "labels" / "v2", overrides,
                               families, 1, "r1")  # fmt: skip


@pytest.mark.skipif(not FAMILIES.exists(), reason="../shared/benchmark not present")
def test_frozen_labels_are_dev_families_only() -> None:
    from mambomeme.evaluation.pooling import read_partitions

    partitions = read_partitions(FAMILIES)
    rows = lab.read_labels_tsv(ROOT / "safety" / "labels" / "v1" / "labels.tsv")
    assert len(rows) >= 4000
    assert all(partitions.get(r.family) == "dev" for r in rows)
    by_family: dict[str, set[str]] = {}
    for r in rows:
        by_family.setdefault(r.family, set()).add(r.split)
    assert all(len(splits) == 1 for splits in by_family.values())  # whole families per split


def test_frozen_labels_act_as_overrides(trained: Any, embed: Any) -> None:
    """A human 'unsafe' label masks an item the model and rules miss; a human 'safe' label
    keeps the model from flagging it; neither un-flags a rule hit."""
    model, _ = trained
    rules = load_classifier()
    fixture = {it.id: it for it in _fixture_items()}
    doxx = dataclasses.replace(fixture[DOXX], safety="safe")
    plain = fixture["fx:john-cena-01"]
    always = dataclasses.replace(model, threshold=0.0)  # the model alone flags everything
    never = dataclasses.replace(model, threshold=2.0)  # ... or nothing
    assert sm.apply(never, [plain], rules, embed, {plain.id: "unsafe"}).items[0].safety == "unsafe"
    assert sm.apply(always, [doxx], rules, embed, {DOXX: "safe"}).items[0].safety == "safe"
    heroin = fixture["fx:conspiracy-keanu-unsafe-heroin"]
    assert sm.apply(never, [heroin], rules, embed, {heroin.id: "safe"}).items[0].safety == "unsafe"


def test_two_pass_unsafe_label_beats_an_earlier_safe_override(trained: Any, embed: Any) -> None:
    model, _ = trained
    rules = load_classifier()
    plain = next(it for it in _fixture_items() if it.id == "fx:john-cena-01")
    rules.overrides[plain.id] = ("safe", "test: an earlier single-reviewer verdict")
    never = dataclasses.replace(model, threshold=2.0)
    assert sm.apply(never, [plain], rules, embed, {plain.id: "unsafe"}).items[0].safety == "unsafe"


def test_a_new_round_freezes_a_new_version_on_top_of_the_old(tmp_path: Path) -> None:
    """Two passes + a third on disagreements -> a new version that keeps the base's labels;
    the base is untouched and an existing version is never overwritten."""
    items = _fixture_items()[:5]
    families = {it.id: lab.item_family(it.template_group) for it in items}
    base = tmp_path / "v1"
    lab.freeze(base, {"labels.tsv": lab.labels_tsv(
        {items[0].id: lab.SafetyLabel(items[0].id, "unsafe", "3")}, families, 1)})  # fmt: skip
    before = (base / "labels.tsv").read_bytes()
    round_dir = tmp_path / "round"
    round_dir.mkdir()
    ids = [it.id for it in items[1:]]
    sheets = {"annotator-a-part-1": ids, "annotator-b-part-1": ids, "annotator-c-part-1": [ids[0]]}
    (round_dir / "assignment.json").write_text(json.dumps({"corpus": "t", "sheets": sheets}))
    head = "item_id,safety,category,note\n"
    (round_dir / "annotator-a-part-1.csv").write_text(
        head + f"{ids[0]},unsafe,1,\n" + "".join(f"{i},safe,,\n" for i in ids[1:]))  # fmt: skip
    (round_dir / "annotator-b-part-1.csv").write_text(head + "".join(f"{i},safe,,\n" for i in ids))
    (round_dir / "annotator-c-part-1.csv").write_text(head + f"{ids[0]},unsafe,1,\n")
    stats = lab.freeze_round(round_dir, tmp_path / "v2", families, 1, base)
    rows = {r.item_id: r for r in lab.read_labels_tsv(tmp_path / "v2" / "labels.tsv")}
    assert len(rows) == 5 and stats["round_items"] == 4 and stats["disputed"] == 1
    assert rows[ids[0]].safety == "unsafe" and rows[items[0].id].category == "3"
    assert (base / "labels.tsv").read_bytes() == before
    with pytest.raises(BenchmarkError, match="never overwritten"):
        lab.freeze_round(round_dir, tmp_path / "v2", families, 1, base)
