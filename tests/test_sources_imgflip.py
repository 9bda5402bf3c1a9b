"""imgflip adapter on a synthetic imgflip575k folder built in tmp_path (no corpus text)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from mambomeme.corpus.schema import validate_record
from mambomeme.corpus.sources import imgflip


def meme(
    post: str, votes: Any, title: str = "a title", boxes: list[str] | None = None
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"views": "1", "title": title, "author": "someone"}
    if votes is not None:
        metadata["img-votes"] = votes
    return {
        "url": f"https://i.example/{post}.jpg",
        "post": f"https://imgflip.com/i/{post}",
        "metadata": metadata,
        "boxes": boxes if boxes is not None else ["top", "", "bottom"],
    }


def build(root: Path, memes: dict[str, bytes]) -> Path:
    folder = root / "imgflip575k"
    (folder / "templates" / "img").mkdir(parents=True)
    (folder / "memes").mkdir()
    template = {
        "title": "John Cena Meme Template",
        "alternative_names": "cena, you can't see me,",
        "template_url": "https://imgflip.com/s/meme/John-Cena.jpg",
        "format": "jpg",
    }
    (folder / "templates" / "John-Cena.json").write_text(json.dumps(template))
    (folder / "templates" / "img" / "John-Cena.jpg").write_bytes(b"jpeg bytes")
    for name, data in memes.items():
        (folder / "memes" / name).write_bytes(data)
    return folder


def gz(records: Any) -> bytes:
    return gzip.compress(json.dumps(records).encode("utf-8"))


def test_template_and_memes_map_to_canonical_fields(tmp_path: Path) -> None:
    folder = build(tmp_path, {"John-Cena.json.gz": gz([meme("abc1", "1,204", "Cena")])})
    records = list(imgflip.read_records({"path": str(folder)}))
    template, item = (validate_record(r.record, r.where) for r in records if r.record)
    assert template.id == "imgflip-template:John-Cena"
    assert (template.kind, template.title, template.template) == (
        "template",
        "John Cena",
        "John Cena",
    )
    assert template.aliases == ("cena", "you can't see me")
    assert template.preview == str((folder / "templates" / "img" / "John-Cena.jpg").resolve())
    assert template.template_group == "tg:imgflip575k-john-cena"  # not in any families.csv
    assert item.id == "imgflip:abc1" and item.kind == "meme"
    assert (item.title, item.ocr_text, item.attribution) == ("Cena", "top / bottom", "someone")
    assert item.template == "John Cena" and item.preview == template.preview
    assert item.source_url == "https://imgflip.com/i/abc1"
    assert item.license == "local-evaluation-only" and item.safety == "safe"


def test_top_per_template_orders_by_votes_then_post_id_as_string(tmp_path: Path) -> None:
    records = [meme("b", "5"), meme("a", 5), meme("c", "1,000"), meme("d", None), meme("10", "5")]
    folder = build(tmp_path, {"John-Cena.json.gz": gz(records)})
    got = list(
        imgflip.read_memes(
            folder, imgflip.catalog_for(folder, None), imgflip.classifier_from_config({}), 3
        )
    )
    # 1000 votes first, then the three with 5 votes: "10" < "a" < "b" as strings
    assert {r.record["id"] for r in got if r.record} == {"imgflip:c", "imgflip:10", "imgflip:a"}
    assert [r.where.rsplit(":", 1)[1] for r in got] == ["1", "2", "4"]  # file order kept


def test_empty_title_falls_back_to_template_name(tmp_path: Path) -> None:
    folder = build(tmp_path, {"John-Cena.json.gz": gz([meme("x", 1, "  ")])})
    records = [r for r in imgflip.read_records({"path": str(folder)}) if r.record]
    assert records[1].record is not None and records[1].record["title"] == "John Cena"


def test_bad_files_and_records_are_named_rejects(tmp_path: Path) -> None:
    good = gz([meme("ok", 1)])
    folder = build(
        tmp_path,
        {
            "A.json.gz": good[: len(good) // 2],  # truncated gzip
            "B.json.gz": gzip.compress(b'[{"post": '),  # invalid JSON
            "C.json.gz": gzip.compress(b'["\xff"]'),  # invalid UTF-8
            "D.json.gz": gz(
                [
                    {"post": "https://imgflip.com/i/nometa", "boxes": []},
                    meme("badvotes", "lots"),
                    meme("dup", 1),
                    meme("dup", 2),
                ]
            ),
            "E.json.gz": gz({"not": "a list"}),
        },
    )
    (folder / "templates" / "Broken.json").write_text('{"title": ')
    records = list(imgflip.read_records({"path": str(folder)}))
    errors = {r.where: r.error for r in records if r.error}
    assert errors["imgflip575k/templates/Broken.json"].startswith("invalid JSON")
    assert errors["imgflip575k/memes/A.json.gz"].startswith("unreadable gzip")
    assert errors["imgflip575k/memes/B.json.gz"].startswith("invalid JSON")
    assert errors["imgflip575k/memes/C.json.gz"].startswith("invalid UTF-8")
    assert errors["imgflip575k/memes/D.json.gz:0"] == "field 'metadata' missing or not an object"
    assert "img-votes" in errors["imgflip575k/memes/D.json.gz:1"]
    assert errors["imgflip575k/memes/E.json.gz"] == "not a JSON list of records"
    duplicates = [r for r in records if r.record and r.record["id"] == "imgflip:dup"]
    assert len(duplicates) == 2  # never deduplicated here; ingest rejects the second
