"""Release robustness figures: SIGKILL the publisher many times; read during many switches.

    python scripts/bench_release.py --kills 300 --switches 2000 --seed 20261201

Prints kills tried, torn states found, switches made, reads done and mixed reads found. Uses
small synthetic releases in a temp folder (the helpers of tests/test_release_support.py).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from test_release_support import (  # noqa: E402
    HERE,
    fake_search,
    kill_campaign,
    make_build,
    write_token,
)

from mambomeme.release.pointer import resolve_current  # noqa: E402
from mambomeme.release.publish import publish  # noqa: E402


def switch_campaign(root: Path, switches: int, readers: int) -> dict[str, int]:
    releases = root / "releases"
    build, manifest, selection = make_build(root, "alpha")
    rel_a = publish(build, manifest, selection, releases)
    write_token(build, "beta")
    rel_b = publish(build, manifest, selection, releases)
    token_of = {rel_a.id: "alpha", rel_b.id: "beta"}
    writer = subprocess.Popen(
        [sys.executable, str(HERE), "switch-loop", str(root), str(switches), rel_a.id, rel_b.id],
        stdout=subprocess.PIPE,
    )
    assert writer.stdout is not None
    writer.stdout.readline()
    counts = {"reads": 0, "mixed": 0, "errors": 0}
    lock = threading.Lock()

    def reader() -> None:
        while writer.poll() is None:
            try:
                release_id, results, lexical = fake_search(resolve_current(releases), "john cena")
                token = token_of[release_id]
                bad = results != [f"fixture:1#{token}", f"fixture:2#{token}"] or lexical != token
            except Exception:
                with lock:
                    counts["errors"] += 1
                continue
            with lock:
                counts["reads"] += 1
                counts["mixed"] += int(bad)

    threads = [threading.Thread(target=reader) for _ in range(readers)]
    for thread in threads:
        thread.start()
    writer.wait()
    for thread in threads:
        thread.join()
    counts["switches"] = switches
    counts["writer_rc"] = writer.returncode
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kills", type=int, default=300)
    parser.add_argument("--switches", type=int, default=2000)
    parser.add_argument("--readers", type=int, default=4)
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--max-delay-ms", type=float, default=None, help="default: 3 cycles")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        kills = kill_campaign(
            Path(tmp) / "kills",
            args.kills,
            args.seed,
            None if args.max_delay_ms is None else args.max_delay_ms / 1000,
        )
        print(
            f"kills tried: {kills['kills']}  torn states: {kills['torn']}  "
            f"worker errors: {kills['worker_errors']}  switches begun by killed workers: "
            f"{kills['switches']}  current still old: {kills['still_old']}  moved: "
            f"{kills['moved']}  publish cycle: {kills['cycle_ms']} ms  max delay: "
            f"{kills['max_delay_ms']} ms  ({time.perf_counter() - start:.1f} s)"
        )
        for problem in kills["problems"][:5]:
            print("  problem:", problem)
        start = time.perf_counter()
        load = switch_campaign(Path(tmp) / "switches", args.switches, args.readers)
        print(
            f"switches under load: {load['switches']}  readers: {args.readers}  reads: "
            f"{load['reads']}  mixed reads: {load['mixed']}  reader errors: {load['errors']}  "
            f"writer rc: {load['writer_rc']}  ({time.perf_counter() - start:.1f} s)"
        )
    bad = (
        kills["torn"] + kills["worker_errors"] + load["mixed"] + load["errors"] + load["writer_rc"]
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
