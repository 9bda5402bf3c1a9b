"""Meme images with known captions, drawn with Pillow: the OCR evaluation's and the tests' input.

Classic meme layout: a busy seeded background (gradient, blobs and noise, so OCR cannot rely on
a flat page) with the caption in bold white capitals outlined in black, one line block at the
top and one at the bottom, wrapped and sized to fit. DejaVu Sans Bold Condensed stands in for
Impact (not free to ship); `font_path` picks another TrueType font.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

from PIL import Image, ImageDraw, ImageFilter, ImageFont

FONT_DIRS = ("/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/dejavu", "/usr/share/fonts/TTF")
FONT_NAMES = ("DejaVuSansCondensed-Bold.ttf", "DejaVuSans-Bold.ttf")  # write_memes alternates

# (top, bottom) captions: meme-shaped, with digits, apostrophes and a question mark
CAPTIONS: tuple[tuple[str, str], ...] = (
    ("one does not simply", "walk into mordor"),
    ("brace yourselves", "the winter exams are coming"),
    ("i don't always test my code", "but when i do i do it in production"),
    ("what if i told you", "the bug was in the config file"),
    ("not sure if tired", "or just bored"),
    ("me explaining the plan", "nobody listening"),
    ("shut up and take", "my money"),
    ("y u no", "write documentation"),
    ("that feeling when", "the build passes on the first try"),
    ("ain't nobody", "got time for that"),
    ("keep calm", "and merge the pull request"),
    ("they said it would take 5 minutes", "it took 3 hours"),
    ("is this", "a pigeon?"),
    ("grumpy cat says", "no"),
    ("when the coffee machine", "is broken again"),
    ("first day at work", "deleted the database"),
    ("so you're telling me", "there are 99 problems"),
    ("everybody gangsta", "until the wifi drops"),
    ("monday morning", "send more coffee"),
    ("all the things", "refactor all the code"),
)


def font_path(name: str = FONT_NAMES[0]) -> Path:
    """The DejaVu font file `name` (FileNotFoundError names where it looked)."""
    for folder in FONT_DIRS:
        if (Path(folder) / name).is_file():
            return Path(folder) / name
    raise FileNotFoundError(f"font {name} not found in {', '.join(FONT_DIRS)}")


def background(width: int, height: int, rng: random.Random) -> Image.Image:
    """A photo-like backdrop: a two-colour gradient, soft blobs, light noise."""
    a = [rng.randrange(30, 200) for _ in range(3)]
    b = [rng.randrange(30, 200) for _ in range(3)]
    image = Image.new("RGB", (width, height))
    draw = ImageDraw.Draw(image)
    for y in range(height):
        t = y / max(height - 1, 1)
        draw.line([(0, y), (width, y)], fill=tuple(int(a[i] + (b[i] - a[i]) * t) for i in range(3)))
    for _ in range(8):
        x, y = rng.randrange(width), rng.randrange(height)
        r = rng.randrange(20, max(21, width // 3))
        colour = tuple(rng.randrange(20, 220) for _ in range(3))
        draw.ellipse([x - r, y - r, x + r, y + r], fill=colour)
    image = image.filter(ImageFilter.GaussianBlur(6))
    noise = Image.effect_noise((width, height), 18).convert("RGB")
    return Image.blend(image, noise, 0.12)


def wrap(
    draw: ImageDraw.ImageDraw, text: str, font: ImageFont.FreeTypeFont, width: int
) -> list[str]:
    lines: list[str] = []
    for word in text.split():
        if lines and draw.textlength(f"{lines[-1]} {word}", font=font) <= width:
            lines[-1] = f"{lines[-1]} {word}"
        else:
            lines.append(word)
    return lines


def _block(
    draw: ImageDraw.ImageDraw, text: str, width: int, height: int, top: bool, font_file: Path
) -> None:
    size = max(14, width // 11)
    while True:
        font = ImageFont.truetype(str(font_file), size)
        lines = wrap(draw, text.upper(), font, int(width * 0.92))
        if len(lines) <= 2 or size <= 14:
            break
        size -= 2
    stroke = max(2, size // 14)
    step = int(size * 1.15)
    y = int(height * 0.03) if top else height - int(height * 0.03) - step * len(lines)
    for line in lines:
        draw.text(
            (width // 2, y), line, font=font, fill="white", anchor="ma",
            stroke_width=stroke, stroke_fill="black",
        )  # fmt: skip
        y += step


def draw_meme(
    top: str, bottom: str, seed: int, size: tuple[int, int] = (500, 500), font: Path | None = None
) -> Image.Image:
    """One meme image: `top` and `bottom` captions (upper-cased) over a seeded background."""
    rng = random.Random(seed)
    width, height = size
    image = background(width, height, rng)
    draw = ImageDraw.Draw(image)
    font_file = font or font_path()
    if top:
        _block(draw, top, width, height, True, font_file)
    if bottom:
        _block(draw, bottom, width, height, False, font_file)
    return image


def write_memes(
    folder: Path, captions: Sequence[tuple[str, str]] = CAPTIONS, seed: int = 20261201
) -> list[tuple[Path, str]]:
    """Draw each caption pair to folder/meme-<n>.png (sizes vary, the fonts of FONT_NAMES
    alternate); returns (path, caption)."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    written = []
    for number, (top, bottom) in enumerate(captions):
        size = (rng.choice((400, 500, 600)), rng.choice((400, 500, 600)))
        path = folder / f"meme-{number:02d}.png"
        font = font_path(FONT_NAMES[number % len(FONT_NAMES)])
        draw_meme(top, bottom, seed + number, size, font).save(path)
        written.append((path, f"{top} {bottom}".strip()))
    return written
