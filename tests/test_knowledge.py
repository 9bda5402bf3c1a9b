"""The template knowledge base covers every template of the fixture and the shared corpora."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from mambomeme.corpus.knowledge import load_knowledge
from mambomeme.corpus.sources import fixture

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


def test_every_fixture_template_has_one_entry() -> None:
    kb = load_knowledge(ROOT / "knowledge")
    names = {
        r["template"] for _, r, _ in fixture.read_records({"path": str(ROOT / "fixture")}) if r
    }
    missing = sorted(n for n in names if n and n.casefold() not in kb)
    assert missing == []


@pytest.mark.skipif(not (SHARED / "corpora").exists(), reason="shared corpora not mounted")
def test_every_shared_template_has_exactly_one_entry() -> None:
    kb = load_knowledge(ROOT / "knowledge")
    imgflip = sorted(p.stem for p in (SHARED / "corpora/imgflip575k/templates").glob("*.json"))
    memegen = sorted(
        p.name
        for p in (SHARED / "corpora/memegen/templates").iterdir()
        if p.is_dir() and not p.name.startswith("_")
    )
    by_imgflip: dict[str, int] = {}
    by_memegen: dict[str, int] = {}
    for entry in kb.values():
        if entry.imgflip:
            by_imgflip[entry.imgflip] = by_imgflip.get(entry.imgflip, 0) + 1
        if entry.memegen:
            by_memegen[entry.memegen] = by_memegen.get(entry.memegen, 0) + 1
    assert {k: by_imgflip.get(k, 0) for k in imgflip} == {k: 1 for k in imgflip}
    assert {k: by_memegen.get(k, 0) for k in memegen} == {k: 1 for k in memegen}
    assert set(by_imgflip) <= set(imgflip) and set(by_memegen) <= set(memegen)
    with open(SHARED / "benchmark/template-equivalences.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            entry = next(e for e in kb.values() if e.imgflip == row["imgflip575k_template"])
            assert entry.memegen == row["memegen_template"].strip()
    templates = len(imgflip) + len(memegen) - sum(1 for e in kb.values() if e.imgflip and e.memegen)
    print(f"knowledge base: {len(kb)} entries; shared corpora have {templates} distinct templates")


def test_no_entry_is_empty() -> None:
    for entry in load_knowledge(ROOT / "knowledge").values():
        assert entry.visual_description and entry.meaning and entry.typical_use and entry.tags
        assert len(entry.visual_description.split()) >= 20, entry.name


def test_every_template_in_every_file_has_a_risk_field() -> None:
    """Read as raw YAML (not through the loader) so a loader that defaulted a missing field
    could not hide one; then the loader carries the same level for every entry."""
    import yaml

    from mambomeme.corpus.knowledge import RISK_LEVELS, key

    kb = load_knowledge(ROOT / "knowledge")
    files = sorted((ROOT / "knowledge").glob("*.yaml"))
    assert {p.name for p in files} >= {
        "templates-imgflip.yaml", "templates-memegen-1.yaml", "templates-memegen-2.yaml",
        "templates-fixture.yaml",
    }  # fmt: skip
    seen = 0
    for path in files:
        for entry in yaml.safe_load(path.read_text(encoding="utf-8"))["templates"]:
            risk = entry.get("risk")
            assert isinstance(risk, dict), f"{path.name}: {entry['name']} has no risk field"
            assert risk["level"] in RISK_LEVELS and str(risk["reason"]).strip(), entry["name"]
            assert kb[key(entry["name"])].risk_level == risk["level"]
            seen += 1
    assert seen == len(kb)


def test_a_missing_or_invalid_risk_field_names_the_template(tmp_path: Path) -> None:
    from mambomeme.errors import SchemaError

    entry = {
        "name": "Sleepy Test Otter", "imgflip": None, "memegen": None, "aliases": [],
        "misspellings": [], "people": [], "visual_description": "An otter asleep on receipts.",
        "meaning": "Tired of paperwork.", "typical_use": "Tax season.", "tags": ["otter"],
        "origin": "test",
    }  # fmt: skip
    import yaml

    cases = {
        "risk": None,
        "risk.level": {"level": "medium", "reason": "x"},
        "risk.reason": {"level": "high", "reason": "none"},
    }
    for field, risk in cases.items():
        folder = tmp_path / field
        folder.mkdir()
        data = dict(entry, **({} if risk is None else {"risk": risk}))
        (folder / "t.yaml").write_text(yaml.safe_dump({"templates": [data]}), encoding="utf-8")
        with pytest.raises(SchemaError) as caught:
            load_knowledge(folder)
        assert caught.value.field == field and "Sleepy Test Otter" in str(caught.value)
    good = tmp_path / "good"
    good.mkdir()
    data = dict(entry, risk={"level": "low", "reason": "typical use is a test"})
    (good / "t.yaml").write_text(yaml.safe_dump({"templates": [data]}), encoding="utf-8")
    assert load_knowledge(good)["sleepy test otter"].risk_reason == "typical use is a test"
