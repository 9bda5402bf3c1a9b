"""Preview cards: deterministic bytes, fixed size, and no writes outside the build directory."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest
from PIL import Image

from mambomeme.corpus.previews import (
    CARD_SIZE,
    card_colours,
    draw_preview,
    generate_previews,
    preview_target,
    wrap_text,
)
from mambomeme.corpus.schema import Item, validate_record
from mambomeme.errors import SchemaError

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "fixture" / "items.jsonl"


def fixture_items() -> list[Item]:
    lines = FIXTURE.read_text(encoding="utf-8").splitlines()
    return [
        validate_record(json.loads(line), f"items.jsonl:{n}") for n, line in enumerate(lines, 1)
    ]


def sample(**changes: object) -> Item:
    base = fixture_items()[0]
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_two_runs_write_byte_identical_files(tmp_path: Path) -> None:
    # Every 4th item plus every non-English one: templates, long captions, accents (fast).
    items = [i for n, i in enumerate(fixture_items()) if n % 4 == 0 or i.language != "en"]
    first = generate_previews(items, tmp_path / "a")
    second = generate_previews(items, tmp_path / "b")
    assert first == second
    assert set(first) == {item.id for item in items}
    for item in items:
        a = (tmp_path / "a" / item.preview).read_bytes()
        b = (tmp_path / "b" / item.preview).read_bytes()
        assert a == b
        assert hashlib.sha256(a).hexdigest() == first[item.id]


def test_rerun_in_the_same_directory_gives_the_same_checksums(tmp_path: Path) -> None:
    items = fixture_items()[:5]
    assert generate_previews(items, tmp_path) == generate_previews(items, tmp_path)
    assert not list(tmp_path.rglob("*.tmp"))


def test_card_is_a_png_of_the_declared_size(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "card.png"
    draw_preview(fixture_items()[0], path)
    with Image.open(path) as image:
        assert image.format == "PNG"
        assert image.size == CARD_SIZE == (320, 240)
        assert image.mode == "RGB"
        assert "date:create" not in image.info and "timestamp" not in image.info


def test_background_follows_the_template_group(tmp_path: Path) -> None:
    a = sample(id="fx:a", template_group="tg:one", preview="previews/a.png")
    b = sample(id="fx:b", template_group="tg:one", ocr_text="other words", preview="previews/b.png")
    c = sample(id="fx:c", template_group="tg:two", preview="previews/c.png")
    generate_previews([a, b, c], tmp_path)
    corner = {}
    for item in (a, b, c):
        with Image.open(tmp_path / item.preview) as image:
            corner[item.id] = image.getpixel((1, 1))
    assert corner["fx:a"] == corner["fx:b"] == card_colours("tg:one")[0]
    assert corner["fx:c"] == card_colours("tg:two")[0] != corner["fx:a"]


def test_caption_changes_the_image(tmp_path: Path) -> None:
    a = sample(id="fx:a", ocr_text="first caption", preview="previews/a.png")
    b = sample(id="fx:b", ocr_text="second caption", preview="previews/b.png")
    sums = generate_previews([a, b], tmp_path)
    assert sums["fx:a"] != sums["fx:b"]


@pytest.mark.parametrize(
    "preview",
    ["../outside.png", "previews/../../outside.png", "previews/../../../etc/x.png", "..\\x.png"],
)
def test_rejects_paths_that_escape_the_build_dir(tmp_path: Path, preview: str) -> None:
    build = tmp_path / "build"
    item = sample(preview=preview)
    with pytest.raises(SchemaError) as info:
        generate_previews([item], build)
    assert info.value.field == "preview" and info.value.where == item.id
    assert not (tmp_path / "outside.png").exists()
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_nothing_is_written_when_a_later_item_is_bad(tmp_path: Path) -> None:
    good = sample(id="fx:good", preview="previews/good.png")
    bad = sample(id="fx:bad", preview="../bad.png")
    with pytest.raises(SchemaError):
        generate_previews([good, bad], tmp_path / "build")
    assert not (tmp_path / "build" / "previews" / "good.png").exists()


def test_rejects_empty_and_non_png_paths(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match="empty"):
        preview_target(sample(preview=" "), tmp_path)
    with pytest.raises(SchemaError, match=".png"):
        preview_target(sample(preview="previews/card.jpg"), tmp_path)


def test_two_items_with_one_preview_path_is_an_error(tmp_path: Path) -> None:
    a = sample(id="fx:a", preview="previews/same.png")
    b = sample(id="fx:b", preview="previews/same.png")
    with pytest.raises(SchemaError, match="fx:a"):
        generate_previews([a, b], tmp_path)


def test_absolute_preview_paths_are_left_alone(tmp_path: Path) -> None:
    existing = tmp_path / "existing.png"
    existing.write_bytes(b"not touched")
    item = sample(preview=str(existing))
    assert generate_previews([item], tmp_path / "build") == {}
    assert existing.read_bytes() == b"not touched"


def test_wrap_text_fits_the_width() -> None:
    from mambomeme.corpus.previews import _font

    font = _font(15)
    lines = wrap_text(
        "a fairly long caption / with a panel break and averyveryverylongwordthatcannotfit",
        font,
        120,
    )
    assert len(lines) > 2
    assert all(font.getlength(line) <= 120 for line in lines)
    assert (
        "".join(lines).replace(" ", "")
        == "afairlylongcaptionwithapanelbreakandaveryveryverylongwordthatcannotfit"
    )
