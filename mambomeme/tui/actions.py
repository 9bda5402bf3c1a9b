"""What the keys do to the selected result: move, choose, open in a viewer, copy; the feedback
toggle and quit."""

from __future__ import annotations

import subprocess
from pathlib import Path

import urwid

from mambomeme.search.results import Result
from mambomeme.tui import clipboard
from mambomeme.tui.options import (
    paused_screen,
)
from mambomeme.tui.state import ControllerState


class ItemActions(ControllerState):
    def do_next(self) -> None:
        self.results.move(1)

    def do_previous(self) -> None:
        self.results.move(-1)

    def do_first(self) -> None:
        self.results.move_to(0)

    def do_last(self) -> None:
        self.results.move_to(-1)

    def do_details_down(self) -> None:
        self.preview.scroll(1)

    def do_details_up(self) -> None:
        self.preview.scroll(-1)

    def do_choose(self) -> None:
        target = self._target()
        if target is None:
            return
        result, path = target
        self.chosen = True
        self._record("choose", result)
        if self.options.print_choice:
            self.chosen_path = path
            raise urwid.ExitMainLoop()
        copy = clipboard.copy_text(str(path), self._terminal_write)
        self.info.message = f"chose #{result.rank} {result.item_id}; {copy.describe('path')}"
        self.status.update(self.info)

    def do_open(self) -> None:
        target = self._target()
        if target is None or self.loop is None:
            return
        result, path = target
        viewer = self.options.viewer
        if not viewer or not viewer[0].strip():  # never run the image itself as the program
            self.info.error = "no image viewer command (--viewer or MAMBOMEME_VIEWER)"
            self.status.update(self.info)
            return
        self._record("open", result)
        try:
            with paused_screen(self.loop):
                done = subprocess.run([*viewer, str(path)], check=False)
            self.info.error = "" if done.returncode == 0 else f"viewer exited {done.returncode}"
            self.info.message = f"opened {path.name}"
        except OSError as exc:
            self.info.error = f"cannot run viewer {viewer[0]!r}: {exc}"
        self.status.update(self.info)

    def do_copy_path(self) -> None:
        target = self._target()
        if target is None:
            return
        result, path = target
        self._record("copy", result)
        self.info.message = clipboard.copy_text(str(path), self._terminal_write).describe("path")
        self.status.update(self.info)

    def do_copy_image(self) -> None:
        target = self._target()
        if target is None:
            return
        result, path = target
        self._record("copy", result)
        image = clipboard.copy_image(path)
        if image.copied:
            self.info.message = image.describe("image")
        else:
            text = clipboard.copy_text(str(path), self._terminal_write)
            self.info.message = f"{image.describe('image')}; {text.describe('path')}"
        self.status.update(self.info)

    def do_toggle_feedback(self) -> None:
        self.feedback.set_enabled(not self.feedback.enabled)
        self.info.feedback = self.feedback.enabled
        self.info.message = (
            f"feedback on: local events in {self.feedback.path}"
            if self.feedback.enabled
            else "feedback off: nothing more is written"
        )
        self.status.update(self.info)

    def do_quit(self) -> None:
        self._record_abandon()
        raise urwid.ExitMainLoop()

    def _target(self) -> tuple[Result, Path] | None:
        result = self.results.selected
        if result is None:
            self.info.message = "no result selected"
            self.status.update(self.info)
            return None
        if not result.preview.strip():  # "" would resolve to the build folder itself
            self.info.message = f"#{result.rank} {result.item_id} has no image file"
            self.status.update(self.info)
            return None
        return result, self._path(result)

    def _terminal_write(self, data: str) -> bool:
        """Write to the terminal (OSC 52); False when there is no terminal screen."""
        if self.screen is not None and isinstance(self.screen, urwid.display.raw.Screen):
            try:
                self.screen.write(data)
                self.screen.flush()
            except OSError:
                return False
            return True
        return False
