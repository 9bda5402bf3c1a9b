"""An image drawn with half blocks: each cell is "▀" with the upper pixel as foreground colour and
the lower pixel as background, so a cell of about 1:2 shows two square pixels.

Colour modes: "truecolor" (#rrggbb), "256" (xterm's 6x6x6 cube plus 24 greys, nearest by squared
RGB distance) and "mono", where there are no colours: each cell becomes a character from a
luminance ramp (ITU-R BT.601 luma Y = 0.299 R + 0.587 G + 0.114 B). The output is plain data (runs
of (fg, bg, text)); widgets.py turns it into urwid markup.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from PIL import Image

HALF_BLOCK = "▀"
MONO_RAMP = " .:-=+*#%@"
_CUBE = (0, 95, 135, 175, 215, 255)  # xterm-256 colour cube levels


class Run(NamedTuple):
    fg: str
    bg: str
    text: str


Row = tuple[Run, ...]


def colour_mode(colors: int) -> str:
    """The mode for a screen's colour count (urwid's `screen.colors`)."""
    if colors >= 2**24:
        return "truecolor"
    if colors >= 256:
        return "256"
    return "mono"


def fit(width: int, height: int, max_cols: int, max_rows: int) -> tuple[int, int]:
    """Cells (cols, rows) that fit the image in max_cols x max_rows keeping its aspect ratio.

    One cell shows 1 x 2 pixels, so the image is scaled to (cols, 2 * rows) pixels.
    """
    if width <= 0 or height <= 0 or max_cols <= 0 or max_rows <= 0:
        return (0, 0)
    scale = min(max_cols / width, (2 * max_rows) / height)
    cols = max(1, min(max_cols, round(width * scale)))
    rows = max(1, min(max_rows, round(height * scale / 2)))
    return (cols, rows)


def xterm256(r: int, g: int, b: int) -> int:
    """Nearest xterm-256 index among the colour cube (16-231) and the grey ramp (232-255)."""

    def level(v: int) -> int:
        return min(range(6), key=lambda i: abs(_CUBE[i] - v))

    ri, gi, bi = level(r), level(g), level(b)
    cube = 16 + 36 * ri + 6 * gi + bi
    cube_rgb = (_CUBE[ri], _CUBE[gi], _CUBE[bi])
    grey_i = min(23, max(0, round(((r + g + b) / 3 - 8) / 10)))
    grey_v = 8 + 10 * grey_i

    def dist(c: tuple[int, int, int]) -> int:
        return (c[0] - r) ** 2 + (c[1] - g) ** 2 + (c[2] - b) ** 2

    return cube if dist(cube_rgb) <= dist((grey_v, grey_v, grey_v)) else 232 + grey_i


def _spec(rgb: tuple[int, int, int], mode: str) -> str:
    if mode == "truecolor":
        return "#{:02x}{:02x}{:02x}".format(*rgb)
    return f"h{xterm256(*rgb)}"


def _merge(cells: list[Run]) -> Row:
    merged: list[Run] = []
    for cell in cells:
        if merged and merged[-1].fg == cell.fg and merged[-1].bg == cell.bg:
            merged[-1] = Run(cell.fg, cell.bg, merged[-1].text + cell.text)
        else:
            merged.append(cell)
    return tuple(merged)


def half_blocks(image: Image.Image, max_cols: int, max_rows: int, mode: str) -> tuple[Row, ...]:
    """Rows of runs drawing `image` in at most max_cols x max_rows cells."""
    if mode not in ("truecolor", "256", "mono"):
        raise ValueError(f"mode: expected truecolor, 256 or mono, got {mode!r}")
    cols, rows = fit(image.width, image.height, max_cols, max_rows)
    if cols == 0:
        return ()
    rgb = image.convert("RGB").resize((cols, 2 * rows), Image.Resampling.BILINEAR)
    px = rgb.load()
    assert px is not None  # Pillow returns an accessor for a loaded RGB image
    out: list[Row] = []
    for row in range(rows):
        cells: list[Run] = []
        for col in range(cols):
            top = px[col, 2 * row]
            bottom = px[col, 2 * row + 1]
            assert isinstance(top, tuple) and isinstance(bottom, tuple)
            if mode == "mono":
                luma = sum(0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2] for c in (top, bottom)) / 2
                char = MONO_RAMP[min(len(MONO_RAMP) - 1, int(luma / 256 * len(MONO_RAMP)))]
                cells.append(Run("", "", char))
            else:
                upper, lower = (top[0], top[1], top[2]), (bottom[0], bottom[1], bottom[2])
                cells.append(Run(_spec(upper, mode), _spec(lower, mode), HALF_BLOCK))
        out.append(_merge(cells))
    return tuple(out)


@lru_cache(maxsize=256)
def image_size(path: str) -> tuple[int, int]:
    """(width, height) in pixels from the file's header; raises OSError if unreadable."""
    with Image.open(Path(path)) as image:
        return image.size


@lru_cache(maxsize=64)
def image_rows(path: str, max_cols: int, max_rows: int, mode: str) -> tuple[Row, ...]:
    """`half_blocks` of the image file at `path`, cached per size; raises OSError if unreadable."""
    with Image.open(Path(path)) as image:
        image.draft("RGB", (max_cols * 2, max_rows * 4))  # fast JPEG decode at a reduced size
        return half_blocks(image, max_cols, max_rows, mode)
