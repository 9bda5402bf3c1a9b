"""Exit-code probe of the real TUI: quit at once, while the dense model is still loading.

    python scripts/probe_tui_exit.py --build build/fixture [--runs 30] [--delay 0.0]

Each run starts `mambomeme tui --build DIR` in an 80x24 pseudo-terminal, waits for the first
draw, waits `--delay` seconds, sends Esc (or Ctrl-C every other run) and records the exit
status. The documented status is 0 for Esc and 130 for Ctrl-C (SIGINT, tui/app.py EXIT_CODES);
anything else (134: an abort at interpreter exit) is counted as a defect. Prints the counts.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mambomeme.tui.harness import PtySession  # noqa: E402

KEYS = {"esc": ("\x1b", 0), "ctrl-c": ("\x03", 130)}  # Ctrl-C: SIGINT, 128 + 2


def one_run(build: Path, key: str, delay: float, home: Path) -> int | None:
    env = dict(os.environ, HOME=str(home), XDG_STATE_HOME=str(home / "state"))
    env.pop("MAMBOMEME_FEEDBACK", None)
    argv = [sys.executable, "-m", "mambomeme.cli", "tui", "--build", str(build), "--no-feedback"]
    session = PtySession(argv, env=env, cwd=ROOT)
    drawn = session.wait_for(lambda: "esc" in session.text() or "#" in session.line(23), 60)
    if not drawn:
        session.child.kill(9)
        return None
    time.sleep(delay)
    session.send(KEYS[key][0])
    return session.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--delay", type=float, default=0.0)
    args = parser.parse_args()
    outcomes: Counter[str] = Counter()
    with tempfile.TemporaryDirectory(prefix="probe-tui-") as scratch:
        for number in range(args.runs):
            key = "esc" if number % 2 == 0 else "ctrl-c"
            status = one_run(args.build.resolve(), key, args.delay, Path(scratch))
            expected = KEYS[key][1]
            outcomes[f"{key} -> {status}" + ("" if status == expected else " (DEFECT)")] += 1
    for outcome, count in sorted(outcomes.items()):
        print(f"  {outcome}: {count}")
    defects = sum(c for o, c in outcomes.items() if "DEFECT" in o)
    print(f"{args.runs} runs, {defects} with an undocumented exit status")


if __name__ == "__main__":
    main()
