"""The folder importer on generated images: OCR accuracy, metadata, cache, hashes, rejects."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageDraw, ImageFont

from mambomeme.corpus.schema import validate_record
from mambomeme.corpus.sources import folder

FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
needs_tesseract = pytest.mark.skipif(
    shutil.which("tesseract") is None, reason="apt-get install tesseract-ocr"
)
needs_font = pytest.mark.skipif(not FONT.exists(), reason="apt-get install fonts-dejavu-core")

# Our own phrases (fixture/dev material only), one image each.
PHRASES = [
    "you can't see me",
    "john cena",
    "and it's gone",
    "ain't nobody got time for that",
    "the quick brown fox",
    "meme search engine",
    "hello world 2026",
    "when the build passes",
    "local search is fast",
    "tests that can fail",
    "mambo meme",
    "bananas are yellow",
]


def draw_text(path: Path, text: str, size: tuple[int, int] = (640, 120), shift: int = 0) -> None:
    image = Image.new("RGB", size, "white")
    font = ImageFont.truetype(str(FONT), 40)
    ImageDraw.Draw(image).text((20 + shift, 30), text, fill="black", font=font)
    image.save(path)


def levenshtein(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def read_all(config: dict[str, Any]) -> list[folder.RawRecord]:
    return list(folder.read_records(config))


def counting_ocr(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = folder.ocr_image

    def wrapper(path: Path, language: str = "eng") -> str:
        calls.append(path.name)
        return real(path, language)

    monkeypatch.setattr(folder, "ocr_image", wrapper)
    return calls


@needs_tesseract
@needs_font
def test_ocr_character_accuracy(tmp_path: Path) -> None:
    for index, phrase in enumerate(PHRASES):
        draw_text(tmp_path / f"img{index:02d}.png", phrase)
    records = read_all({"path": str(tmp_path)})
    assert [r.error for r in records] == [None] * len(PHRASES)
    total_distance = total_length = 0
    for record, phrase in zip(records, PHRASES, strict=True):
        assert record.record is not None
        got = record.record["ocr_text"].lower()
        total_distance += levenshtein(got, phrase)
        total_length += len(phrase)
    accuracy = 1 - total_distance / total_length
    print(f"OCR character accuracy over {len(PHRASES)} images: {accuracy:.3f}")
    assert accuracy >= 0.9


@needs_tesseract
@needs_font
def test_cache_skips_ocr_of_unchanged_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    images = tmp_path / "images"
    images.mkdir()
    for index, phrase in enumerate(PHRASES[:3]):
        draw_text(images / f"img{index}.png", phrase)
    config = {"path": str(images), "cache": str(tmp_path / "cache.json")}
    calls = counting_ocr(monkeypatch)
    first = read_all(config)
    assert len(calls) == 3
    second = read_all(config)
    assert len(calls) == 3, "unchanged files must come from the cache"
    assert [r.record for r in first] == [r.record for r in second]
    draw_text(images / "img1.png", "a changed caption")
    third = read_all(config)
    assert calls[3:] == ["img1.png"]
    assert third[1].record is not None and "changed" in third[1].record["ocr_text"].lower()


@needs_font
def test_metadata_sidecars_and_csv_give_text_without_ocr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    draw_text(tmp_path / "a.png", "one")
    draw_text(tmp_path / "b.jpg", "two", shift=200)
    (tmp_path / "sub").mkdir()
    draw_text(tmp_path / "sub" / "c.png", "three", size=(300, 300))
    (tmp_path / "a.png.json").write_text(
        json.dumps({"title": "John Cena", "ocr_text": "you can't see me", "tags": ["wrestling"]})
    )
    (tmp_path / "b.yaml").write_text("title: Mambo\nocr_text: mambo meme\n")
    (tmp_path / "metadata.csv").write_text("file,title,tags,ocr_text\nsub/c.png,Third,x;y,three\n")
    calls = counting_ocr(monkeypatch)
    records = read_all({"path": str(tmp_path)})
    assert calls == []
    items = [validate_record(r.record, r.where) for r in records if r.record is not None]
    assert [(i.title, i.ocr_text, i.tags) for i in items] == [
        ("John Cena", "you can't see me", ("wrestling",)),
        ("Mambo", "mambo meme", ()),
        ("Third", "three", ("x", "y")),
    ]
    assert items[0].id == "file:" + items[0].image_sha256[:16]
    assert items[0].preview == str((tmp_path / "a.png").resolve())


@needs_font
def test_bad_inputs_are_named_rejects(tmp_path: Path) -> None:
    draw_text(tmp_path / "good.png", "x")
    (tmp_path / "good.png.json").write_text(json.dumps({"ocr_text": "x"}))
    (tmp_path / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\nnot really a png")
    shutil.copy(tmp_path / "good.png", tmp_path / "zcopy.png")
    (tmp_path / "zcopy.png.json").write_text(json.dumps({"ocr_text": "x"}))
    draw_text(tmp_path / "meta.png", "y")
    (tmp_path / "meta.json").write_text("{not json")
    draw_text(tmp_path / "odd.png", "z")
    (tmp_path / "odd.json").write_text(json.dumps({"ocr_text": "z", "colour": "red"}))
    draw_text(tmp_path / "bytes.png", "w")
    (tmp_path / "bytes.yaml").write_bytes(b"title: \xff\xfe\n")
    records = {r.where: r for r in read_all({"path": str(tmp_path)})}
    assert len(records) == 6
    assert records["good.png"].error is None
    assert "unreadable image" in str(records["broken.png"].error)
    assert records["zcopy.png"].error == "exact duplicate of good.png"
    assert "invalid metadata" in str(records["meta.png"].error)
    assert "unknown field 'colour'" in str(records["odd.png"].error)
    assert "invalid UTF-8" in str(records["bytes.png"].error)


@needs_font
def test_near_duplicates_share_a_phash_group(tmp_path: Path) -> None:
    draw_text(tmp_path / "a.png", "same picture", size=(400, 400))
    with Image.open(tmp_path / "a.png") as image:
        image.resize((380, 380)).save(tmp_path / "b.png")  # a resized variant
    noise = Image.effect_noise((400, 400), 90).convert("RGB")
    noise.save(tmp_path / "c.png")
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.json").write_text(json.dumps({"ocr_text": name}))
    records = read_all({"path": str(tmp_path), "phash_distance": 8})
    groups = [r.record["template_group"] for r in records if r.record is not None]
    assert groups[0] == groups[1] != groups[2]
    assert all(g.startswith("phash:") and len(g) == len("phash:") + 16 for g in groups)


def test_phash_groups_are_single_linkage_and_named_by_first_member() -> None:
    hashes = ["0000000000000000", "ffffffffffffffff", "000000000000000f", "00000000000000ff"]
    # 0 and 2 differ by 4 bits, 2 and 3 by 4, 0 and 3 by 8; 1 is far from all
    assert folder.phash_groups(hashes, 4) == [
        "phash:0000000000000000",
        "phash:ffffffffffffffff",
        "phash:0000000000000000",
        "phash:0000000000000000",
    ]
    assert folder.phash_groups(hashes, 3) == [f"phash:{h}" for h in hashes]


def test_missing_folder_raises(tmp_path: Path) -> None:
    with pytest.raises(folder.IngestError, match="not a folder"):
        read_all({"path": str(tmp_path / "absent")})


def test_corrupt_cache_is_ignored(tmp_path: Path) -> None:
    (tmp_path / "cache.json").write_text("{truncated")
    assert folder.load_cache(tmp_path / "cache.json") == {}
    os.remove(tmp_path / "cache.json")
    assert folder.load_cache(tmp_path / "cache.json") == {}


def _scene(seed: int) -> Image.Image:
    """A deterministic picture with structure (phash needs more than a flat or gradient image)."""
    import random

    from PIL import ImageDraw

    rnd = random.Random(seed)
    image = Image.new("RGB", (400, 400), (240, 240, 240))
    draw = ImageDraw.Draw(image)
    for _ in range(6):
        x, y, w = rnd.randrange(0, 300), rnd.randrange(0, 300), rnd.randrange(40, 120)
        draw.ellipse((x, y, x + w, y + w), fill=tuple(rnd.randrange(0, 255) for _ in range(3)))
    return image


def test_images_are_linked_to_a_known_template_by_perceptual_hash(tmp_path: Path) -> None:
    """A captioned copy of a local template image gets that template's name (and so, at
    ingest, its knowledge); an unrelated picture gets none."""
    from PIL import ImageDraw

    templates = tmp_path / "templates"
    templates.mkdir()
    _scene(1).save(templates / "Sleepy Otter Accountant.png")
    _scene(2).save(templates / "Ghost Roommate.png")
    photos = tmp_path / "photos"
    photos.mkdir()
    captioned = _scene(1)
    ImageDraw.Draw(captioned).text((20, 370), "TAX SEASON AGAIN", fill=(0, 0, 0))
    captioned.save(photos / "mine.png")
    _scene(3).save(photos / "other.png")
    for name in ("mine", "other"):
        (photos / f"{name}.json").write_text(json.dumps({"ocr_text": name}))
    records = read_all({"path": str(photos), "template_images": str(templates)})
    by_title = {r.record["title"]: r.record for r in records if r.record is not None}
    assert by_title["mine"]["template"] == "Sleepy Otter Accountant"
    assert by_title["mine"]["template_group"] == "tg:Sleepy Otter Accountant"
    assert by_title["other"]["template"] == ""
