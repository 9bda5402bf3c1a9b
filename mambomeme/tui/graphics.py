"""Real pictures through a terminal graphics protocol (Kitty's or iTerm2's), where there is one.

The preview pane reserves blank cells for the image (widgets.ImageView with `graphics`), and after
each draw the screen writes the image over them (`GraphicsScreen.draw_screen`): the cursor is
saved, moved to the image's first cell, the image written scaled to its cells, the cursor put back.
The images are cleared whenever what is shown changes, and when the screen stops:

- Kitty (kitty, WezTerm, Konsole, Ghostty): transmit-and-display `a=T,f=100` (PNG) with `c`/`r` in
  cells, `C=1` (the cursor stays), `q=2` (no replies to read back), base64 in chunks of at most
  4096 bytes (`m=1` on all but the last); cleared with delete-all `a=d,d=A`.
  https://sw.kovidgoyal.net/kitty/graphics-protocol/
- iTerm2 (iTerm2, WezTerm): OSC 1337 `File=inline=1;width=<cells>;height=<cells>`; an image
  stays in its cells until text is written over them, so a change repaints the whole screen.
  https://iterm2.com/documentation-images.html

Elsewhere (tmux and screen pass no graphics through; most terminals have none) the half-block
preview of preview.py is drawn. `term-image` (PyPI) does this too, but its releases pin Pillow
below 11 and this project pins Pillow 13, so the two escape sequences are written here.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import urwid
from PIL import Image

from mambomeme.errors import MamboMemeError

PROTOCOLS = ("kitty", "iterm2", "blocks")
SETTINGS = ("auto", *PROTOCOLS)
CELL_PX = (10, 20)  # pixels sent per cell (the terminal scales the image to the cells anyway)
CHUNK = 4096
KITTY_CLEAR = "\x1b_Ga=d,d=A,q=2\x1b\\"
SAVE_CURSOR = "\x1b7"
RESTORE_CURSOR = "\x1b8"


class GraphicsError(MamboMemeError):
    """An unknown graphics setting (--graphics or params tui.graphics)."""


def detect(env: Mapping[str, str]) -> str:
    """The protocol the terminal in `env` speaks: "kitty", "iterm2" or "blocks"."""
    term, program = env.get("TERM", ""), env.get("TERM_PROGRAM", "")
    if env.get("TMUX") or term.startswith(("screen", "tmux")):
        return "blocks"  # a multiplexer passes no graphics through
    if "kitty" in term or env.get("KITTY_WINDOW_ID") or env.get("KONSOLE_VERSION"):
        return "kitty"
    if program in ("WezTerm", "ghostty") or term == "xterm-ghostty":
        return "kitty"
    if program == "iTerm.app" or env.get("LC_TERMINAL") == "iTerm2":
        return "iterm2"
    return "blocks"


def choose(setting: str, env: Mapping[str, str], source: str = "--graphics") -> str:
    """The protocol for a setting: "auto" detects from `env`; the others are taken as given."""
    if setting not in SETTINGS:
        raise GraphicsError(f"{source}: expected one of {', '.join(SETTINGS)}, got {setting!r}")
    return detect(env) if setting == "auto" else setting


class Placement(NamedTuple):
    """An image file drawn at screen cell (row, col), `cols` x `rows` cells (0-based)."""

    path: str
    row: int
    col: int
    cols: int
    rows: int


@lru_cache(maxsize=32)
def png_bytes(path: str, cols: int, rows: int) -> bytes:
    """The image as a PNG of about the pixels its cells show (raises OSError if unreadable)."""
    with Image.open(Path(path)) as image:
        image.draft("RGB", (cols * CELL_PX[0], rows * CELL_PX[1]))
        rgb = image.convert("RGB")
    rgb.thumbnail((cols * CELL_PX[0], rows * CELL_PX[1]))
    out = io.BytesIO()
    rgb.save(out, format="PNG")
    return out.getvalue()


def kitty_sequence(png: bytes, cols: int, rows: int) -> str:
    """Kitty transmit-and-display of a PNG scaled to cols x rows cells, in chunks."""
    payload = base64.standard_b64encode(png).decode("ascii")
    chunks = [payload[i : i + CHUNK] for i in range(0, len(payload), CHUNK)] or [""]
    out: list[str] = []
    for i, chunk in enumerate(chunks):
        more = int(i < len(chunks) - 1)
        head = f"a=T,f=100,c={cols},r={rows},C=1,q=2,m={more}" if i == 0 else f"m={more}"
        out.append(f"\x1b_G{head};{chunk}\x1b\\")
    return "".join(out)


def iterm2_sequence(data: bytes, cols: int, rows: int) -> str:
    """iTerm2 inline image in cols x rows cells (keeping its aspect ratio inside them)."""
    payload = base64.standard_b64encode(data).decode("ascii")
    size = f"size={len(data)};width={cols};height={rows};preserveAspectRatio=1"
    return f"\x1b]1337;File=inline=1;{size}:{payload}\x07"


def move_to(row: int, col: int) -> str:
    return f"\x1b[{row + 1};{col + 1}H"


class Painter:
    """What to write after a draw so the terminal shows `placement` (and nothing older)."""

    def __init__(self, protocol: str) -> None:
        if protocol not in ("kitty", "iterm2"):
            raise GraphicsError(f"no graphics protocol {protocol!r} to paint with")
        self.protocol = protocol
        self.last: Placement | None = None

    def must_repaint(self, placement: Placement | None) -> bool:
        """iTerm2 keeps an old image until text covers its cells: repaint the screen first."""
        return self.protocol == "iterm2" and self.last is not None and placement != self.last

    def paint(self, placement: Placement | None) -> str:
        """The escape sequences that clear the old image and draw `placement` ("" if same)."""
        if placement == self.last:
            return ""
        out = KITTY_CLEAR if self.protocol == "kitty" else ""
        self.last = placement
        if placement is None:
            return out
        try:
            png = png_bytes(placement.path, placement.cols, placement.rows)
        except (OSError, ValueError):
            return out  # the pane says why in its own cells
        encode = kitty_sequence if self.protocol == "kitty" else iterm2_sequence
        image = encode(png, placement.cols, placement.rows)
        return f"{out}{SAVE_CURSOR}{move_to(placement.row, placement.col)}{image}{RESTORE_CURSOR}"

    def clear(self) -> str:
        """The sequence that removes what was painted (the screen is stopping)."""
        self.last = None
        return KITTY_CLEAR if self.protocol == "kitty" else ""


class GraphicsScreen(urwid.display.raw.Screen):
    """A raw screen that paints the image of `placement()` after each draw."""

    def __init__(
        self, painter: Painter, placement: Callable[[], Placement | None], **kwargs: object
    ) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.painter = painter
        self.placement = placement

    def draw_screen(self, size: tuple[int, int], canvas: urwid.Canvas) -> None:
        where = self.placement()
        if self.painter.must_repaint(where):
            self.clear()
        super().draw_screen(size, canvas)
        data = self.painter.paint(where)
        if data:
            self.write(data)
            self.flush()

    def _stop(self) -> None:
        data = self.painter.clear()
        if data:
            self.write(data)
            self.flush()
        super()._stop()
