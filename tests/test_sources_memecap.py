"""memecap adapter on a synthetic memes-test.json built in tmp_path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mambomeme.corpus.schema import validate_record
from mambomeme.corpus.sources import memecap


def post(post_id: str, **changes: Any) -> dict[str, Any]:
    record = {
        "post_id": post_id,
        "title": "Mambo meme",
        "category": "memes",
        "url": "https://i.example/x.png",
        "img_fname": "x.png",
        "img_captions": ["A man waves his hand.", ""],
        "meme_captions": ["Nobody can see him."],
        "metaphors": [],
    }
    record.update(changes)
    return record


def test_fields(tmp_path: Path) -> None:
    path = tmp_path / "memes-test.json"
    path.write_text(json.dumps([post("p1")]))
    [record] = list(memecap.read_records({"path": str(path)}))
    item = validate_record(record.record or {}, record.where)
    assert (item.id, item.kind, item.template, item.template_group) == (
        "memecap:p1",
        "meme",
        "",
        "memecap:p1",
    )
    assert item.visual_description == "A man waves his hand."
    assert item.meaning == "Nobody can see him."
    assert item.tags == ("memes",) and item.preview == ""


def test_bad_records_and_files(tmp_path: Path) -> None:
    path = tmp_path / "memes-test.json"
    path.write_text(
        json.dumps(
            [post("p1"), post("p2", title=None), post("p3", img_captions="x"), "string", post("p1")]
        )
    )
    records = list(memecap.read_records({"path": str(path)}))
    assert [r.error for r in records] == [
        None,
        "field 'title' missing or not a string",
        "field 'img_captions' missing or not a list of strings",
        "record is not a JSON object",
        None,
    ]
    assert records[4].where == f"{tmp_path.name}/memes-test.json:4"  # duplicate kept, named
    path.write_text("[{")
    [bad] = list(memecap.read_records({"path": str(path)}))
    assert bad.record is None and str(bad.error).startswith("invalid JSON")
    path.write_bytes(b'["\xc3"]')
    [bad] = list(memecap.read_records({"path": str(path)}))
    assert str(bad.error).startswith("invalid UTF-8")
