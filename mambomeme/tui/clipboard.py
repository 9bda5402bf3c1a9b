"""Copy to the clipboard: wl-copy (Wayland) or xclip (X11) when present, else OSC 52 for text.

OSC 52 ("ESC ] 52 ; c ; <base64> BEL") asks the terminal itself to set the clipboard; it carries
text only, so an image is copied only through wl-copy or xclip. MAMBOMEME_CLIPBOARD=osc52 forces
the escape sequence (tests, remote sessions).

Only a clipboard tool that exits 0 counts as copied. A terminal never answers OSC 52, so a copy
sent that way is reported as sent, unconfirmed; `Copy.describe` says what happened and what to do.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

ENV_FORCE = "MAMBOMEME_CLIPBOARD"
NO_TOOL = "no wl-copy or xclip found"
INSTALL = "install wl-copy (Wayland) or xclip (X11) to be sure"


class Copy(NamedTuple):
    """The outcome of one copy."""

    copied: bool  # True only when a clipboard tool exited 0
    how: str  # "wl-copy", "xclip", "OSC 52" (sent, unconfirmed) or "" (went nowhere)
    problem: str  # why it is not known to be copied ("" when copied)

    def describe(self, what: str) -> str:
        """A status-line sentence about copying `what` ("path", "image")."""
        if self.copied:
            return f"{what} copied ({self.how})"
        if self.how == "OSC 52":
            return f"{what} sent to the terminal as OSC 52, unconfirmed ({self.problem})"
        return f"{what} NOT copied: {self.problem}"


def osc52(text: str) -> str:
    return "\x1b]52;c;" + base64.b64encode(text.encode("utf-8")).decode("ascii") + "\x07"


def _tool(image_type: str | None = None) -> Sequence[str] | None:
    if os.environ.get(ENV_FORCE) == "osc52":
        return None
    if os.environ.get("WAYLAND_DISPLAY") and shutil.which("wl-copy"):
        return ["wl-copy", *(["--type", image_type] if image_type else [])]
    if os.environ.get("DISPLAY") and shutil.which("xclip"):
        return ["xclip", "-selection", "clipboard", *(["-t", image_type] if image_type else [])]
    return None


def _run(command: Sequence[str], data: bytes) -> str:
    """Run the clipboard tool; "" on success, else why it failed."""
    try:
        done = subprocess.run(
            list(command),
            input=data,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=5,
            check=False,
        )
    except OSError as exc:
        return f"{command[0]} did not run: {exc.strerror or exc}"
    except subprocess.TimeoutExpired:
        return f"{command[0]} did not finish in 5 s"
    if done.returncode == 0:
        return ""
    said = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return f"{command[0]} failed (exit {done.returncode}{': ' + said[0] if said else ''})"


def copy_text(text: str, terminal_write: Callable[[str], bool]) -> Copy:
    """Copy `text` with a clipboard tool; else send OSC 52 through `terminal_write`.

    `terminal_write` returns False when there is no terminal to write to.
    """
    tool = _tool()
    if tool is None:
        problem = "forced by MAMBOMEME_CLIPBOARD=osc52" if os.environ.get(ENV_FORCE) else NO_TOOL
    else:
        problem = _run(tool, text.encode("utf-8"))
        if not problem:
            return Copy(True, tool[0], "")
    if terminal_write(osc52(text)):
        hint = "" if os.environ.get(ENV_FORCE) else f"; {INSTALL}"
        return Copy(False, "OSC 52", problem + hint)
    return Copy(False, "", f"{problem}, and no terminal for OSC 52")


def copy_image(path: Path) -> Copy:
    """Copy the image file's bytes as image/<type>; only wl-copy or xclip can."""
    suffix = path.suffix.lower().lstrip(".")
    image_type = "image/" + ("jpeg" if suffix == "jpg" else suffix or "png")
    tool = _tool(image_type)
    if tool is None:
        return Copy(False, "", f"{NO_TOOL} (an image needs one)")
    try:
        data = path.read_bytes()
    except OSError as exc:
        return Copy(False, "", f"cannot read {path}: {exc.strerror or exc}")
    problem = _run(tool, data)
    return Copy(not problem, tool[0] if not problem else "", problem)
