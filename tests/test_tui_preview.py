"""Half-block image rendering: sizes, colour mapping, modes."""

from __future__ import annotations

import pytest
from PIL import Image

from mambomeme.tui import preview


def test_fit_keeps_aspect_with_two_pixels_per_cell() -> None:
    assert preview.fit(100, 100, 40, 40) == (40, 20)  # square: 40 px wide, 40 px = 20 rows tall
    assert preview.fit(200, 50, 40, 40) == (40, 5)
    assert preview.fit(10, 100, 40, 10) == (2, 10)
    assert preview.fit(0, 10, 40, 10) == (0, 0)


def test_xterm256_known_colours() -> None:
    assert preview.xterm256(0, 0, 0) == 16
    assert preview.xterm256(255, 0, 0) == 196  # 16 + 36 * 5
    assert preview.xterm256(255, 255, 255) == 231
    assert preview.xterm256(128, 128, 128) == 244  # grey ramp: 8 + 10 * 12 = 128


def test_half_blocks_upper_pixel_is_foreground() -> None:
    image = Image.new("RGB", (1, 2))
    image.putpixel((0, 0), (255, 0, 0))
    image.putpixel((0, 1), (0, 0, 255))
    rows = preview.half_blocks(image, 1, 1, "truecolor")
    assert rows == ((preview.Run("#ff0000", "#0000ff", "▀"),),)
    assert preview.half_blocks(image, 1, 1, "256") == ((preview.Run("h196", "h21", "▀"),),)


def test_runs_of_equal_colour_are_merged() -> None:
    rows = preview.half_blocks(Image.new("RGB", (4, 2), (0, 0, 0)), 4, 1, "256")
    assert rows == ((preview.Run("h16", "h16", "▀▀▀▀"),),)


def test_mono_mode_uses_the_luminance_ramp() -> None:
    black = preview.half_blocks(Image.new("RGB", (2, 2), (0, 0, 0)), 2, 1, "mono")
    white = preview.half_blocks(Image.new("RGB", (2, 2), (255, 255, 255)), 2, 1, "mono")
    assert black == ((preview.Run("", "", "  "),),)
    assert white == ((preview.Run("", "", "@@"),),)


def test_colour_mode_from_screen_colours_and_bad_mode() -> None:
    assert [preview.colour_mode(c) for c in (1, 16, 88, 256, 2**24)] == [
        "mono",
        "mono",
        "mono",
        "256",
        "truecolor",
    ]
    with pytest.raises(ValueError, match="mode"):
        preview.half_blocks(Image.new("RGB", (1, 1)), 1, 1, "sixel")
