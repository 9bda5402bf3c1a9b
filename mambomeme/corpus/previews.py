"""Deterministic preview cards for corpora that ship no images (the fixture).

Each card is a 320x240 PNG: a background colour taken from sha256(template_group) (so variants
of one template share a colour), the template name at the top, the caption (`ocr_text`; for a
blank template its visual description, else its title) wrapped in the middle, and a small
"MamboMeme fixture" footer. Pillow writes no timestamp chunk unless asked, and the drawing
depends only on the item's fields and the font file, so two runs give byte-identical files
(same Pillow and font version).

Only relative `preview` paths are written, always inside the build directory; absolute paths
point at images that already exist (shared corpora) and are left alone.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path, PurePosixPath

from PIL import Image, ImageDraw, ImageFont

from mambomeme.corpus.preview_paths import external_path
from mambomeme.corpus.schema import Item
from mambomeme.errors import SchemaError

CARD_SIZE = (320, 240)
MARGIN = 10
FOOTER = "MamboMeme fixture"
FONT_PATH = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
BOLD_FONT_PATH = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf")

Font = ImageFont.FreeTypeFont | ImageFont.ImageFont


@lru_cache(maxsize=16)
def _font(size: int, bold: bool = False) -> Font:
    """DejaVu Sans when installed, else Pillow's built-in font (still deterministic)."""
    path = BOLD_FONT_PATH if bold else FONT_PATH
    if path.is_file():
        return ImageFont.truetype(str(path), size)
    return ImageFont.load_default(size)


def card_colours(template_group: str) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(background, text) colours. Background = first three bytes of sha256(template_group),
    mixed half-way with white so text stays readable; text is black or white by luminance
    (ITU-R BT.601 weights: 0.299 R + 0.587 G + 0.114 B)."""
    digest = hashlib.sha256(template_group.encode("utf-8")).digest()
    r, g, b = ((channel + 255) // 2 for channel in digest[:3])
    luminance = 0.299 * r + 0.587 * g + 0.114 * b
    text = (0, 0, 0) if luminance >= 140 else (255, 255, 255)
    return (r, g, b), text


def wrap_text(text: str, font: Font, width: int) -> list[str]:
    """Greedy word wrap to `width` pixels; a word longer than a line is split by characters."""
    lines: list[str] = []
    for paragraph in text.replace(" / ", "\n").splitlines():
        line = ""
        for word in paragraph.split():
            candidate = f"{line} {word}" if line else word
            if font.getlength(candidate) <= width:
                line = candidate
                continue
            if line:
                lines.append(line)
            line = word
            while font.getlength(line) > width and len(line) > 1:
                cut = len(line) - 1
                while cut > 1 and font.getlength(line[:cut]) > width:
                    cut -= 1
                lines.append(line[:cut])
                line = line[cut:]
        if line:
            lines.append(line)
    return lines


def render_card(item: Item) -> Image.Image:
    """The card for one item, as an RGB image of CARD_SIZE."""
    width, height = CARD_SIZE
    background, ink = card_colours(item.template_group)
    image = Image.new("RGB", CARD_SIZE, background)
    draw = ImageDraw.Draw(image)

    title_font = _font(16, bold=True)
    body_font = _font(15)
    footer_font = _font(10)
    inner = width - 2 * MARGIN

    header = wrap_text(item.template or item.title, title_font, inner)[:1]
    draw.text((MARGIN, MARGIN), header[0] if header else "", font=title_font, fill=ink)
    draw.line((MARGIN, 34, width - MARGIN, 34), fill=ink, width=1)

    line_height = 19
    top, bottom = 44, height - 26
    max_lines = (bottom - top) // line_height
    caption = item.ocr_text.strip() or item.visual_description.strip() or item.title
    lines = wrap_text(caption, body_font, inner)
    if len(lines) > max_lines:
        lines = lines[: max_lines - 1] + [lines[max_lines - 1].rstrip() + " ..."]
    y = top + (bottom - top - line_height * len(lines)) // 2
    for line in lines:
        x = (width - body_font.getlength(line)) / 2
        draw.text((x, y), line, font=body_font, fill=ink)
        y += line_height

    draw.text((MARGIN, height - 18), FOOTER, font=footer_font, fill=ink)
    return image


def preview_target(item: Item, build_dir: Path) -> Path | None:
    """Where the item's preview is written, or None for an absolute (existing) image path.

    Raises SchemaError for an empty path, a `..` component, or a path leaving build_dir."""
    raw = item.preview
    if not raw.strip():
        raise SchemaError(item.id, "preview", "empty preview path")
    if external_path(raw) is not None or PurePosixPath(raw).is_absolute():
        return None
    relative = PurePosixPath(raw.replace("\\", "/"))
    if ".." in relative.parts:
        raise SchemaError(item.id, "preview", f"path escapes the build directory: {raw!r}")
    if relative.suffix.lower() != ".png":
        raise SchemaError(item.id, "preview", f"generated previews must be .png: {raw!r}")
    root = build_dir.resolve()
    target = (root / Path(*relative.parts)).resolve()
    if root not in target.parents:
        raise SchemaError(item.id, "preview", f"path escapes the build directory: {raw!r}")
    return target


def draw_preview(item: Item, path: Path) -> None:
    """Render the item's card and write it to `path` as PNG (written to a temporary file
    first, then renamed, so a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    render_card(item).save(temporary, format="PNG")
    os.replace(temporary, path)


def generate_previews(items: Iterable[Item], build_dir: Path) -> dict[str, str]:
    """Write a card for every item with a relative preview path; return item id -> sha256 of
    the written PNG. Every path is checked before anything is written; two items naming the
    same preview file is an error (one would silently overwrite the other)."""
    targets: dict[str, tuple[Item, Path]] = {}
    owner: dict[Path, str] = {}
    for item in items:
        target = preview_target(item, build_dir)
        if target is None:
            continue
        if item.id in targets:
            raise SchemaError(item.id, "id", "item listed twice")
        if target in owner:
            raise SchemaError(item.id, "preview", f"same preview file as {owner[target]}")
        owner[target] = item.id
        targets[item.id] = (item, target)
    checksums: dict[str, str] = {}
    for item_id, (item, target) in targets.items():
        draw_preview(item, target)
        checksums[item_id] = hashlib.sha256(target.read_bytes()).hexdigest()
    return checksums
