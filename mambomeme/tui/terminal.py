"""Keys typed before the TUI's first draw are kept (type-ahead).

A terminal in its normal (canonical) mode holds what is typed until Enter, and urwid starts its
screen with `tty.setcbreak`, whose default TCSAFLUSH discards that pending input. `HeldInput`
switches the terminal to non-canonical, no-echo input at once with TCSANOW, which keeps what was
typed and makes it readable; `drain` reads it (without waiting) just before urwid starts and puts
the original settings back, so urwid saves and restores the real ones (an external viewer run
from the TUI gets the normal terminal). The controller feeds the bytes to the loop after the first
draw. Only keys typed in the instant between `drain` and urwid's start are lost.
"""

from __future__ import annotations

import os
import select
import termios
from types import TracebackType
from typing import Any

_LFLAG = 3  # termios attribute list: iflag, oflag, cflag, lflag, ispeed, ospeed, cc
_CC = 6


class HeldInput:
    """Context manager holding type-ahead on the terminal file descriptor `fd`."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._saved: list[Any] | None = None

    def __enter__(self) -> HeldInput:
        if not os.isatty(self.fd):
            return self
        try:
            self._saved = termios.tcgetattr(self.fd)
            mode = termios.tcgetattr(self.fd)
            mode[_LFLAG] &= ~(termios.ICANON | termios.ECHO)
            cc = list(mode[_CC])
            cc[termios.VMIN], cc[termios.VTIME] = 1, 0
            mode[_CC] = cc
            termios.tcsetattr(self.fd, termios.TCSANOW, mode)  # TCSANOW: nothing is discarded
        except termios.error:
            self._saved = None
        return self

    def drain(self) -> bytes:
        """Everything typed so far, without waiting; then the terminal's own settings again."""
        if self._saved is None:
            return b""
        data = bytearray()
        while select.select([self.fd], [], [], 0)[0]:
            try:
                chunk = os.read(self.fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            data.extend(chunk)
        self._restore()
        return bytes(data)

    def _restore(self) -> None:
        if self._saved is not None:
            try:
                termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)
            except termios.error:
                pass  # the terminal hung up: nothing to restore
            self._saved = None

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _value: BaseException | None,
        _tb: TracebackType | None,
    ) -> None:
        self._restore()
