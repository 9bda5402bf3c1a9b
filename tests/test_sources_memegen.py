"""memegen adapter on synthetic template folders built in tmp_path."""

from __future__ import annotations

from pathlib import Path

from mambomeme.corpus.schema import validate_record
from mambomeme.corpus.sources import memegen

CONFIG = """name: John Cena
source: https://example.org/john-cena
keywords:
  - wrestling
  -
  - ''
example:
  - you can't
  - ''
  - see me
"""


def build(root: Path, configs: dict[str, bytes]) -> Path:
    for key, data in configs.items():
        (root / "templates" / key).mkdir(parents=True)
        (root / "templates" / key / "config.yml").write_bytes(data)
    return root


def test_template_fields(tmp_path: Path) -> None:
    root = build(tmp_path, {"cena": CONFIG.encode()})
    (root / "templates" / "cena" / "default.png").write_bytes(b"png bytes")
    [record] = list(memegen.read_records({"path": str(root)}))
    item = validate_record(record.record or {}, record.where)
    assert (item.id, item.kind, item.title) == ("memegen:cena", "template", "John Cena")
    assert item.aliases == ("wrestling",)
    assert item.ocr_text == "you can't / see me"
    assert item.source_url == "https://example.org/john-cena"
    assert item.preview == str((root / "templates" / "cena" / "default.png").resolve())
    assert item.template_group == "tg:memegen-cena"


def test_exclude_and_placeholders(tmp_path: Path) -> None:
    root = build(tmp_path, {"_test": CONFIG.encode(), "cena": CONFIG.encode()})
    assert len(list(memegen.read_records({"path": str(root)}))) == 2
    kept = list(memegen.read_records({"path": str(root), "exclude": list(memegen.PLACEHOLDERS)}))
    assert [r.where for r in kept] == [
        "memegen/templates/cena/config.yml".replace("memegen", root.name, 1)
    ]


def test_bad_configs_are_named_rejects(tmp_path: Path) -> None:
    root = build(
        tmp_path,
        {
            "a": b"name: [unclosed\n",
            "b": b"name: \xff\n",
            "c": b"source: nowhere\n",
            "d": b"name: X\nkeywords: {a: 1}\n",
            "e": b"- a list\n",
        },
    )
    errors = {r.where.split("/")[2]: r.error for r in memegen.read_records({"path": str(root)})}
    assert str(errors["a"]).startswith("invalid YAML")
    assert str(errors["b"]).startswith("invalid UTF-8")
    assert errors["c"] == "field 'name' missing or not a string"
    assert errors["d"] == "field 'keywords' is not a list"
    assert errors["e"] == "not a YAML mapping"
