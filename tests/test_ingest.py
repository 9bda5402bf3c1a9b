"""Ingest: every record accepted or rejected by name, stable manifests, strict mode."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mambomeme.corpus.ingest import ingest, load_items
from mambomeme.corpus.schema import validate_record
from mambomeme.errors import IngestError, SchemaError

ROOT = Path(__file__).resolve().parents[1]


def _good() -> dict[str, object]:
    line = (ROOT / "fixture" / "items.jsonl").read_text(encoding="utf-8").splitlines()[0]
    return dict(json.loads(line))


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"kind": "video"}, "kind"),
        ({"safety": "maybe"}, "safety"),
        ({"language": "English"}, "language"),
        ({"published": "yes"}, "published"),
        ({"aliases": "john"}, "aliases"),
        ({"title": "   "}, "title"),
        ({"id": "bad id with spaces"}, "id"),
        ({"ocr_text": "a\x00b"}, "ocr_text"),
        ({"meaning": "x\ud800"}, "meaning"),
        ({"colour": "red"}, "colour"),
        ({"image_sha256": "XYZ"}, "image_sha256"),
    ],
)
def test_schema_rejects_name_the_field(change: dict[str, object], field: str) -> None:
    record = {**_good(), **change}
    with pytest.raises(SchemaError) as info:
        validate_record(record, "items.jsonl:7")
    assert info.value.field == field
    assert str(info.value).startswith(f"items.jsonl:7:{field}:")


def test_missing_field_is_named() -> None:
    record = _good()
    del record["meaning"]
    with pytest.raises(SchemaError, match="items.jsonl:1:meaning:missing"):
        validate_record(record, "items.jsonl:1")


def _write_corpus(folder: Path, lines: list[bytes]) -> dict[str, str]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "items.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    return {"source": "fixture", "path": str(folder)}


def test_rejects_are_counted_never_dropped(tmp_path: Path) -> None:
    good = _good()
    second = {**good, "id": "fx:second", "preview": "previews/fx_second.png"}
    lines = [
        json.dumps(good).encode(),
        b'{"id": "truncated',
        json.dumps({**good, "kind": "gif"}).encode(),
        b"\xff\xfe not utf-8",
        json.dumps(good).encode(),  # duplicate id
        json.dumps(second).encode(),
        b"[1, 2]",
    ]
    config = _write_corpus(tmp_path / "src", lines)
    result = ingest("t", config, tmp_path / "build", tmp_path / "m.json", strict=False)
    counts = result.manifest["counts"]
    assert counts["input"] == 7 == counts["accepted"] + counts["rejected"]
    assert counts["accepted"] == 2
    reasons = result.manifest["rejects"]
    assert any(r.startswith("items.jsonl:2:<record>:invalid JSON") for r in reasons)
    assert any(r.startswith("items.jsonl:3:kind:") for r in reasons)
    assert any(r.startswith("items.jsonl:4:<record>:invalid UTF-8") for r in reasons)
    assert any(r.startswith("items.jsonl:5:id:duplicate id") for r in reasons)
    assert any(r.startswith("items.jsonl:7:<record>:not a JSON object") for r in reasons)
    assert [it.id for it in load_items(tmp_path / "build")] == sorted([good["id"], "fx:second"])


def test_strict_mode_fails_and_writes_nothing(tmp_path: Path) -> None:
    config = _write_corpus(tmp_path / "src", [json.dumps(_good()).encode(), b"{bad"])
    with pytest.raises(IngestError, match="1 rejected"):
        ingest("t", config, tmp_path / "build", tmp_path / "m.json", strict=True)
    assert not (tmp_path / "m.json").exists()
    assert not (tmp_path / "build" / "items.parquet").exists()


def test_manifest_is_stable_across_two_runs(tmp_path: Path) -> None:
    config = {"source": "fixture", "path": str(ROOT / "fixture")}
    first = ingest("fixture", config, tmp_path / "a", tmp_path / "a.json", True, ROOT / "knowledge")
    second = ingest(
        "fixture", config, tmp_path / "b", tmp_path / "b.json", True, ROOT / "knowledge"
    )
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    assert first.manifest["items_sha256"] == second.manifest["items_sha256"]
    counts = first.manifest["counts"]
    assert counts["input"] == counts["accepted"] == 175 and counts["rejected"] == 0
    assert first.manifest["knowledge"]["items_joined"] > 100
    cena = next(it for it in first.items if it.id == "fx:tpl-john-cena")
    assert cena.template_visual and "wrestler" in cena.template_visual
    for name in ("a", "b"):
        previews = sorted((tmp_path / name / "previews").iterdir())
        assert len(previews) == 175
    assert first.manifest["previews"] == second.manifest["previews"]
