"""DVC stage gates: the score inputs a run cannot know, measured here and written to JSON.

- release_protocol / publication_rollback / terminal_restoration: the result (pass = True) of
  running their test files with pytest now, on this checkout;
- submit_to_render_p95_ms: from the TUI latency harness report (`mambomeme bench tui`).
A missing input stays null, which the scorecard reports as NOT EVALUATED (a failing gate).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run, stage_params  # noqa: E402

from mambomeme.corpus.manifest import write_json_atomic  # noqa: E402

TESTS = {
    # the protocol through `mambomeme run` / `mambomeme score` on a test-made hidden benchmark,
    # plus its rules one by one and the tuning that refuses hidden benchmarks
    "release_protocol": [
        "tests/test_release_protocol_commands.py",
        "tests/test_release_protocol.py",
        "tests/test_tuning.py",
    ],
    "publication_rollback": ["tests/test_release_publish.py", "tests/test_release_crash.py"],
    "terminal_restoration": ["tests/test_tui_pty.py"],
}


def passes(files: list[str]) -> bool:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *files],
        capture_output=True,
        text=True,
        check=False,
    )
    print(done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-500:])
    return done.returncode == 0


def main() -> None:
    params = stage_params(__doc__.splitlines()[0])
    corpus = str(params["base"]["corpus"])
    reports = Path(params["base"]["reports"])
    gates: dict[str, object] = {name: passes(files) for name, files in TESTS.items()}
    latency = reports / f"latency-tui-{corpus}.json"
    p95 = None
    if latency.exists():
        p95 = json.loads(latency.read_text(encoding="utf-8"))["inside"]["p95_ms"]
    gates["submit_to_render_p95_ms"] = p95
    gates["critical_items"] = []
    gates["critical_violations"] = []
    write_json_atomic(reports / "gates-input.json", gates)
    print(f"gates {corpus}: {gates}")


if __name__ == "__main__":
    run(main)
