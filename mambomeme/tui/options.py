"""What a TUI session runs with (TuiOptions, from `mambomeme tui`'s options and params) and the
constants and small helpers the controller's parts share."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import urwid

from mambomeme.corpus.schema import KINDS, Item
from mambomeme.errors import MamboMemeError
from mambomeme.search.results import Filters
from mambomeme.search.systems import DEFAULT_SYSTEM
from mambomeme.tui import graphics

ItemLookup = Callable[[str], "Item | None"]
ENV_TEST_RAISE = "MAMBOMEME_TUI_TEST_RAISE"  # test hook: an action whose handler raises
EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}
_KIND_CYCLE: tuple[str | None, ...] = (None, *KINDS)
LIVE_DEBOUNCE_S = 0.15  # --live: search this long after the last edit of the query
PREVIEW_MIN_COLS = 90  # narrower: no pane beside the list (it needs the width); p: full screen
FULL_PREVIEW_TEXT_ROWS = 4  # the full-screen preview keeps this many rows for the path and text


@dataclass(frozen=True)
class TuiOptions:
    build_dir: Path
    release: str
    limit: int = 20
    system: str = DEFAULT_SYSTEM  # used once semantic search is ready; QUICK_SYSTEM until then
    print_choice: bool = False
    viewer: tuple[str, ...] = ("xdg-open",)
    timing_file: Path | None = None
    show_preview: bool = True
    raise_in: str = ""
    query: str = ""  # searched at start (--query)
    live: bool = False  # search as you type (--live)
    live_debounce_s: float = LIVE_DEBOUNCE_S
    graphics: str = "blocks"  # kitty, iterm2 or blocks (graphics.choose: --graphics, params)

    def __post_init__(self) -> None:
        if self.graphics not in graphics.PROTOCOLS:
            raise graphics.GraphicsError(
                f"graphics: expected one of {', '.join(graphics.PROTOCOLS)}, got {self.graphics!r}"
            )
        if not self.viewer or not self.viewer[0].strip():
            raise MamboMemeError(
                f"--viewer: the image viewer command is blank ({self.viewer!r}); give a program "
                "such as xdg-open (or set MAMBOMEME_VIEWER)"
            )


def no_match_text(cues: Sequence[str], filters: Filters, semantic: str) -> str:
    tips = ["fewer or other words", "an alternate cue after |"]
    if any(vars(filters).values()):
        tips.append("clearing the filters (f)")
    if semantic != "ready":
        tips.append("again once semantic search is ready")
    return f"no confident match for {' | '.join(cues)!r}. Try {', '.join(tips)}."


@contextmanager
def paused_screen(loop: urwid.MainLoop) -> Iterator[None]:
    """Give the terminal back (normal screen, cooked mode) for the block, then redraw."""
    loop.screen.stop()
    try:
        yield
    finally:
        loop.screen.start()
        loop.screen.clear()
        loop.draw_screen()
