"""Previews through a terminal graphics protocol (tui/graphics.py): detection, the escape
sequences written (Kitty, iTerm2), and where the controller places the image over the cells the
pane reserves. The half-block path and the bytes a real run writes are in test_tui_pty.py."""

from __future__ import annotations

import base64
import io
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from PIL import Image

from mambomeme.search.results import Filters, MatchedField, Result, RouteHit, SearchResponse
from mambomeme.tui import graphics
from mambomeme.tui.app import Controller, TuiOptions
from mambomeme.tui.feedback import FeedbackLog, Versions


@pytest.mark.parametrize(
    ("env", "protocol"),
    [
        ({"TERM": "xterm-kitty"}, "kitty"),
        ({"TERM": "xterm-256color", "KITTY_WINDOW_ID": "1"}, "kitty"),
        ({"TERM": "xterm-256color", "TERM_PROGRAM": "WezTerm"}, "kitty"),
        ({"TERM": "xterm-256color", "KONSOLE_VERSION": "230800"}, "kitty"),
        ({"TERM": "xterm-256color", "TERM_PROGRAM": "iTerm.app"}, "iterm2"),
        ({"TERM": "xterm-256color", "LC_TERMINAL": "iTerm2"}, "iterm2"),
        ({"TERM": "xterm-256color"}, "blocks"),
        ({"TERM": "tmux-256color", "TERM_PROGRAM": "tmux"}, "blocks"),
        ({"TERM": "xterm-kitty", "TMUX": "/tmp/tmux-0/default,1,0"}, "blocks"),  # no passthrough
        ({}, "blocks"),
    ],
)
def test_detect(env: dict[str, str], protocol: str) -> None:
    assert graphics.detect(env) == protocol


def test_choose_takes_an_override_and_refuses_an_unknown_setting() -> None:
    assert graphics.choose("auto", {"TERM": "xterm-kitty"}) == "kitty"
    assert graphics.choose("blocks", {"TERM": "xterm-kitty"}) == "blocks"
    assert graphics.choose("iterm2", {}) == "iterm2"
    with pytest.raises(graphics.GraphicsError, match="tui.graphics: expected one of auto"):
        graphics.choose("sixel", {}, "tui.graphics")


def noise_png(width: int = 300, height: int = 200) -> bytes:
    image = Image.effect_noise((width, height), 80).convert("RGB")
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def test_kitty_sequence_is_chunked_png_in_cells() -> None:
    png = noise_png()
    sequence = graphics.kitty_sequence(png, 20, 7)
    chunks = sequence.split("\x1b\\")[:-1]
    assert len(chunks) > 1 and all(c.startswith("\x1b_G") for c in chunks)
    heads = [c[3:].split(";", 1)[0] for c in chunks]
    assert heads[0] == "a=T,f=100,c=20,r=7,C=1,q=2,m=1"
    assert heads[1:-1] == ["m=1"] * (len(chunks) - 2) and heads[-1] == "m=0"
    payloads = [c.split(";", 1)[1] for c in chunks]
    assert all(len(p) <= graphics.CHUNK for p in payloads)
    assert base64.standard_b64decode("".join(payloads)) == png


def test_iterm2_sequence_is_one_inline_file() -> None:
    png = noise_png(30, 20)
    sequence = graphics.iterm2_sequence(png, 12, 5)
    head, payload = sequence.removesuffix("\x07").split(":", 1)
    size = f"size={len(png)};width=12;height=5;preserveAspectRatio=1"
    assert head == f"\x1b]1337;File=inline=1;{size}"
    assert base64.standard_b64decode(payload) == png


def result(rank: int, preview: str) -> Result:
    return Result(
        rank=rank,
        item_id=f"id-{rank}",
        title=f"title {rank}",
        template="Tmpl",
        kind="meme",
        preview=preview,
        attribution="someone",
        license="CC0-1.0",
        fused_score=1.0 / rank,
        hits=(RouteHit(0, "lexical", rank, 2.0),),
        matched_fields=(MatchedField("ocr_text", f"text {rank}"),),
    )


def two_images(cues: Sequence[str], limit: int, filters: Filters, system: str) -> SearchResponse:
    return SearchResponse("req", system, tuple(cues), (result(1, "a.png"), result(2, "b.png")))


def controller(tmp_path: Path, protocol: str) -> Controller:
    Image.new("RGB", (40, 30), (200, 10, 10)).save(tmp_path / "a.png")
    Image.new("RGB", (30, 40), (10, 10, 200)).save(tmp_path / "b.png")
    log = FeedbackLog(tmp_path / "events.jsonl", Versions("d", "r", "i"), enabled=False)
    options = TuiOptions(build_dir=tmp_path, release="fixture", graphics=protocol)
    c = Controller(two_images, options, log)
    c.start_threads()
    for ch in "cat":
        c.feed_keys([ch], (80, 24))
    c.feed_keys(["enter"], (80, 24))
    deadline = time.time() + 5
    while not c.has_outcomes():
        assert time.time() < deadline
        time.sleep(0.002)
    c.process_wakeup()
    return c


def screen(c: Controller, size: tuple[int, int]) -> list[str]:
    return [row.decode("utf-8") for row in c.top.render(size, focus=True).text]


def test_kitty_image_goes_over_the_blank_cells_the_full_screen_preview_reserves(
    tmp_path: Path,
) -> None:
    c = controller(tmp_path, "kitty")
    screen(c, (80, 24))
    assert c.image_placement() is None  # the list: no image on screen
    c.feed_keys(["p"], (80, 24))
    rows = screen(c, (80, 24))
    where = c.image_placement()
    # below the query line and the path; 40x30 pixels in at most 80 x (21 - 4) cells, 1:2 cells
    assert where == graphics.Placement(str(tmp_path / "a.png"), 2, 0, 45, 17)
    assert rows[1].startswith("path: ") and not any("▀" in row for row in rows)
    for row in rows[where.row : where.row + where.rows]:
        assert row[where.col : where.col + where.cols] == " " * where.cols  # reserved
    painter = graphics.Painter("kitty")
    written = painter.paint(where)
    assert written.startswith(graphics.KITTY_CLEAR + graphics.SAVE_CURSOR + "\x1b[3;1H")
    assert "\x1b_Ga=T,f=100,c=45,r=17,C=1,q=2," in written
    assert written.endswith(graphics.RESTORE_CURSOR)
    assert painter.paint(where) == ""  # unchanged: nothing written again
    c.feed_keys(["j"], (80, 24))  # another result: the old image is cleared, the new drawn
    screen(c, (80, 24))
    moved = c.image_placement()
    assert moved is not None and moved.path.endswith("b.png")
    assert painter.paint(moved).startswith(graphics.KITTY_CLEAR + graphics.SAVE_CURSOR)
    c.feed_keys(["p"], (80, 24))  # back to the list: cleared, nothing drawn
    screen(c, (80, 24))
    assert c.image_placement() is None and painter.paint(None) == graphics.KITTY_CLEAR
    c.feed_keys(["f1"], (80, 24))
    assert c.image_placement() is None  # never over a dialog or the help
    c.stop_threads()


def test_the_image_sits_in_the_pane_beside_the_list_on_a_wide_terminal(tmp_path: Path) -> None:
    c = controller(tmp_path, "iterm2")
    rows = screen(c, (120, 30))
    where = c.image_placement()
    widths = c.layout.columns.column_widths((120, 30))
    path_rows = c.preview.path_rows(widths[1])  # a long tmp path wraps in the pane
    assert path_rows >= 1 and rows[1][widths[0] + 1 :].startswith("path: ")
    assert where is not None and where.row == 1 + path_rows
    assert where.rows == 13  # half of the 27 body rows
    assert where.col == widths[0] + 1 and where.cols <= widths[1]
    for row in rows[where.row : where.row + where.rows]:
        assert row[where.col : where.col + where.cols] == " " * where.cols  # reserved
    painter = graphics.Painter("iterm2")
    written = painter.paint(where)
    move = f"\x1b[{where.row + 1};{where.col + 1}H"
    assert written.startswith(graphics.SAVE_CURSOR + move + "\x1b]1337;File=")
    assert not painter.must_repaint(where)
    c.feed_keys(["j"], (120, 30))
    screen(c, (120, 30))
    assert painter.must_repaint(c.image_placement())  # iTerm2: repaint to clear the old image
    c.stop_threads()
