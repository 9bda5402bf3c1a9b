"""End-to-end runs of the real TUI in an 80x24 pseudo-terminal (pexpect + pyte).

The TUI runs inside a shell that records `stty -a` before and after, so every exit path (q,
Ctrl-C, SIGTERM, SIGHUP, an injected exception, after an external viewer) must leave the terminal
exactly as it found it, off the alternate screen and with the cursor shown. These use the fake
engine (--fake-engine): invented items, no corpus data.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import sys
from pathlib import Path

import pytest

from mambomeme.tui.harness import PtySession

pytestmark = pytest.mark.slow  # each test starts a Python process in a PTY (~2 s)

ROOT = Path(__file__).resolve().parents[1]
RMCUP = b"\x1b[?1049l"
SMCUP = b"\x1b[?1049h"
SHOW_CURSOR = b"\x1b[?25h"
HIDE_CURSOR = b"\x1b[?25l"


class Run:
    def __init__(
        self,
        tmp: Path,
        extra: str = "",
        env: dict[str, str] | None = None,
        redirect: str = "",
        type_ahead: str = "",
    ) -> None:
        self.tmp = tmp
        (tmp / "home").mkdir(exist_ok=True)
        (tmp / "state").mkdir(exist_ok=True)
        tui = (
            f"{shlex.quote(sys.executable)} -m mambomeme.cli tui --fake-engine "
            f"--build {shlex.quote(str(tmp / 'build'))} {extra}"
        )
        script = (
            f"stty -a > {tmp}/before; {tui} {redirect}; echo $? > {tmp}/rc; stty -a > {tmp}/after"
        )
        full_env = dict(
            os.environ,
            HOME=str(tmp / "home"),
            XDG_STATE_HOME=str(tmp / "state"),
            MAMBOMEME_FAKE_DENSE_DELAY="0.1",
            MAMBOMEME_CLIPBOARD="osc52",
            PYTHONPATH=str(ROOT),
        )
        full_env.pop("MAMBOMEME_FEEDBACK", None)
        full_env.update(env or {})
        self.session = PtySession(
            ["/bin/bash", "--noprofile", "--norc", "-c", script], env=full_env, cwd=ROOT
        )
        if type_ahead:  # sent at once: Python has not even started, let alone drawn
            self.session.send(type_ahead)
        assert self.session.wait_for(lambda: self.status().startswith("#"), 30), self.text()

    def status(self) -> str:
        return self.session.line(23).strip()

    def text(self) -> str:
        return self.session.text()

    def tui_pid(self) -> int:
        bash = self.session.child.pid
        children = Path(f"/proc/{bash}/task/{bash}/children").read_text().split()
        assert len(children) == 1, children
        return int(children[0])

    def search(self, query: str, seq: int) -> None:
        if seq > 1:
            self.session.send("/")
        self.session.send("\x15" + query + "\r")
        ok = self.session.wait_for(
            lambda: self.status().startswith(f"#{seq}  ") and "searching" not in self.status(), 10
        )
        assert ok, self.text()

    def finish(self) -> int:
        self.session.close()
        rc_file = self.tmp / "rc"
        assert rc_file.exists(), self.session.raw[-2000:]
        return int(rc_file.read_text())

    def assert_terminal_restored(self) -> None:
        before = (self.tmp / "before").read_text()
        after = (self.tmp / "after").read_text()
        assert before == after
        raw = bytes(self.session.raw)
        assert SMCUP in raw and raw.rfind(RMCUP) > raw.rfind(SMCUP)
        assert SHOW_CURSOR in raw and raw.rfind(SHOW_CURSOR) > raw.rfind(HIDE_CURSOR)


def no_files_under(path: Path) -> list[str]:
    return [str(p) for p in path.rglob("*")]


def test_quit_with_q_restores_terminal_and_writes_no_feedback(tmp_path: Path) -> None:
    run = Run(tmp_path)
    run.search("john cena", 1)
    screen = run.text()
    assert " 1. John Cena " in screen and "sem:" in run.status()
    run.session.send("/\x15")  # q quits on an empty query line; in the list it is typed
    assert run.session.wait_for(lambda: run.session.line(0).rstrip() == "query>", 5), run.text()
    run.session.send("q")
    assert run.finish() == 0
    run.assert_terminal_restored()
    assert no_files_under(tmp_path / "state") == [] and no_files_under(tmp_path / "home") == []


def test_esc_quits_and_restores_terminal(tmp_path: Path) -> None:
    run = Run(tmp_path)
    assert "esc quit" in run.session.line(22)  # the first screen's one-line key hint
    run.search("john cena", 1)  # from the results list ...
    run.session.send("\x1b")
    assert run.finish() == 0
    run.assert_terminal_restored()


def test_esc_quits_from_the_query_line_with_text(tmp_path: Path) -> None:
    run = Run(tmp_path)
    run.session.send("half typed")
    assert run.session.wait_for(lambda: "query> half typed" in run.session.line(0), 5)
    run.session.send("\x1b")
    assert run.finish() == 0
    run.assert_terminal_restored()


def test_type_ahead_is_kept(tmp_path: Path) -> None:
    # typed before the first draw, Enter included: nothing is lost, and the search runs
    run = Run(tmp_path, type_ahead="quiet robot\r", env={"MAMBOMEME_FAKE_DENSE_DELAY": "5"})
    ok = run.session.wait_for(
        lambda: run.status().startswith("#1  ") and "result" in run.status(), 10
    )
    assert ok, run.text()
    assert run.session.line(0).startswith("query> quiet robot")  # q typed, not quit
    assert " 1. Sleepy Robot " in run.text()
    run.session.send("\x1b")
    assert run.finish() == 0
    run.assert_terminal_restored()


def test_ctrl_c_restores_terminal(tmp_path: Path) -> None:
    run = Run(tmp_path)
    run.session.send("\x03")
    assert run.finish() == 130
    run.assert_terminal_restored()


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_signals_restore_terminal(tmp_path: Path, sig: signal.Signals, code: int) -> None:
    run = Run(tmp_path)
    run.search("robot", 1)
    os.kill(run.tui_pid(), sig)
    assert run.finish() == code
    run.assert_terminal_restored()


def test_injected_exception_restores_terminal(tmp_path: Path) -> None:
    run = Run(tmp_path, env={"MAMBOMEME_TUI_TEST_RAISE": "submit"})
    run.session.send("john\r")
    assert run.finish() == 1
    run.assert_terminal_restored()
    assert b"injected failure in 'submit'" in bytes(run.session.raw)


def test_external_viewer_pauses_and_restores_terminal(tmp_path: Path) -> None:
    viewer = tmp_path / "viewer.sh"
    viewer.write_text(f'#!/bin/sh\nstty -a > {tmp_path}/during\necho "$1" > {tmp_path}/opened\n')
    viewer.chmod(0o755)
    run = Run(tmp_path, env={"MAMBOMEME_VIEWER": str(viewer)})
    # the "semantic search ready" notice shares the message line: let it arrive first, or on a
    # loaded machine it can replace the "opened ..." notice this test reads
    assert run.session.wait_for(lambda: "sem:ready" in run.status(), 30), run.text()
    run.search("john cena", 1)
    run.session.send("o")
    assert run.session.wait_for(lambda: (tmp_path / "opened").exists(), 10)
    assert run.session.wait_for(lambda: "opened fake-" in run.text(), 10), run.text()
    assert " 1. John Cena " in run.text()  # redrawn after the viewer
    run.session.send("\x1b")
    assert run.finish() == 0
    run.assert_terminal_restored()
    # while the viewer ran, the terminal was in its normal (cooked) mode
    assert (tmp_path / "during").read_text() == (tmp_path / "before").read_text()
    opened = Path((tmp_path / "opened").read_text().strip())
    assert opened.is_absolute() and opened.suffix == ".png" and opened.exists()


def test_print_choice_prints_the_path_and_composes(tmp_path: Path) -> None:
    out = tmp_path / "choice.txt"
    run = Run(tmp_path, extra="--print-choice", redirect=f"> {out}")
    run.search("sleepy robot", 1)
    run.session.send("j\r")  # the second result
    assert run.finish() == 0
    run.assert_terminal_restored()
    chosen = Path(out.read_text().strip())
    assert chosen.is_absolute() and chosen.exists() and chosen.suffix == ".png"


def test_semantic_ready_is_reported_and_used(tmp_path: Path) -> None:
    run = Run(tmp_path)
    assert run.session.wait_for(lambda: "sem:ready" in run.status(), 10), run.text()
    assert "esc quit" in run.session.line(22)  # the key hint stays; sem:ready says it
    run.search("john cena", 1)
    assert "dense+lex" in run.status()
    run.session.send("\x1b")
    assert run.finish() == 0


def test_feedback_opt_in_two_launches_distinct_sessions(tmp_path: Path) -> None:
    events = tmp_path / "state" / "mambomeme" / "events.jsonl"
    for _launch in range(2):
        run = Run(tmp_path, extra="--feedback")
        run.search("john cena", 1)
        run.session.send("y")  # copy: a diagnostic action; OSC 52 is never claimed as copied
        sent = "path sent to the terminal as OSC 52, unconfirmed"
        copied = run.session.wait_for(lambda r=run, s=sent: s in r.text(), 10)
        assert copied
        run.search("blue teapot", 2)  # a reformulation of the first list
        run.session.send("\x1b")  # quitting without choosing: abandon
        assert run.finish() == 0
        assert b"\x1b]52;c;" in bytes(run.session.raw)
    records = [json.loads(line) for line in events.read_text().splitlines()]
    assert [r["action"] for r in records] == ["copy", "reformulate", "abandon"] * 2
    assert len({r["session_id"] for r in records[:3]}) == 1
    assert records[0]["session_id"] != records[3]["session_id"]
    assert records[0]["query"] == "john cena" and records[0]["target_rank"] == 1
    assert records[2]["query"] == "blue teapot"
    assert oct(events.stat().st_mode & 0o777) == "0o600"
    assert oct(events.parent.stat().st_mode & 0o777) == "0o700"


def test_feedback_key_turns_it_on(tmp_path: Path) -> None:
    run = Run(tmp_path)
    run.search("john cena", 1)
    assert "fb:off" in run.status()
    run.session.send("F")  # a typed letter never opts in to logging: it edits the query
    assert not run.session.wait_for(lambda: "fb:on" in run.status(), 0.5)
    assert run.session.line(0).startswith("query> john cenaF")
    run.session.send("\t")  # back to the list
    run.session.send("\x0f")  # ctrl o, the deliberate key
    assert run.session.wait_for(lambda: "fb:on" in run.status(), 5)
    run.session.send("\r")  # choose rank 1: the one selection action
    assert run.session.wait_for(lambda: "chose #1" in run.text(), 5)
    run.session.send("\x1b")
    assert run.finish() == 0
    events = tmp_path / "state" / "mambomeme" / "events.jsonl"
    assert [json.loads(x)["action"] for x in events.read_text().splitlines()] == ["choose"]


def test_p_at_80x24_shows_the_half_block_preview_full_screen(tmp_path: Path) -> None:
    run = Run(tmp_path, extra="--graphics blocks")
    run.search("john cena", 1)
    assert "▀" not in run.text()  # 80 columns: no room beside the list
    run.session.send("p")
    assert run.session.wait_for(lambda: "p list" in run.session.line(22), 10), run.text()
    assert run.session.line(1).startswith("path: ")  # the hint is drawn last: all is there
    assert sum("▀" in run.session.line(row) for row in range(24)) >= 10
    run.session.send("p")
    assert run.session.wait_for(lambda: "▀" not in run.text(), 10), run.text()
    run.session.send("\x1b")
    assert run.finish() == 0
    run.assert_terminal_restored()


def test_kitty_protocol_draws_the_image_and_clears_it(tmp_path: Path) -> None:
    shown, cleared = b"\x1b_Ga=T,f=100,", b"\x1b_Ga=d,d=A,q=2\x1b\\"
    run = Run(tmp_path, extra="--graphics kitty")
    run.search("john cena", 1)
    assert shown not in bytes(run.session.raw)
    run.session.send("p")
    assert run.session.wait_for(lambda: shown in bytes(run.session.raw), 10)
    raw = bytes(run.session.raw)
    assert raw.rfind(cleared) < raw.rfind(shown)  # cleared first, then drawn
    at = re.search(rb"\x1b7\x1b\[(\d+);1H" + re.escape(shown), raw)
    assert at is not None and int(at.group(1)) >= 3  # column 1, below the query and the path
    run.session.send("p")  # the list again: the image is deleted
    assert run.session.wait_for(
        lambda: bytes(run.session.raw).rfind(cleared) > bytes(run.session.raw).rfind(shown), 10
    )
    run.session.send("\x1b")
    assert run.finish() == 0
    run.assert_terminal_restored()
