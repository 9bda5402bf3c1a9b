"""Copy to the clipboard: wl-copy (Wayland) or xclip (X11) when present, else OSC 52 for text.

OSC 52 ("ESC ] 52 ; c ; <base64> BEL") asks the terminal itself to set the clipboard; it carries
text only, so an image is copied only through wl-copy or xclip. MAMBOMEME_CLIPBOARD=osc52 forces
the escape sequence (tests, remote sessions).
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

ENV_FORCE = "MAMBOMEME_CLIPBOARD"


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


def _run(command: Sequence[str], data: bytes) -> bool:
    try:
        done = subprocess.run(
            list(command),
            input=data,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def copy_text(text: str, terminal_write: Callable[[str], None]) -> str:
    """Copy `text`; returns how ("wl-copy", "xclip" or "OSC 52")."""
    tool = _tool()
    if tool is not None and _run(tool, text.encode("utf-8")):
        return tool[0]
    terminal_write(osc52(text))
    return "OSC 52"


def copy_image(path: Path) -> str | None:
    """Copy the image file's bytes as image/<type>; None when no image clipboard is available."""
    suffix = path.suffix.lower().lstrip(".")
    image_type = "image/" + ("jpeg" if suffix == "jpg" else suffix or "png")
    tool = _tool(image_type)
    if tool is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return tool[0] if _run(tool, data) else None
