"""A publisher killed at random points never leaves a torn release; readers never mix versions."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest
from test_release_support import (
    HERE,
    fake_search,
    kill_campaign,
    make_build,
    release_token,
    write_token,
)

from mambomeme.release.pointer import resolve_current
from mambomeme.release.publish import publish, read_history


@pytest.mark.slow
def test_sigkill_at_random_points_leaves_old_or_new_release(tmp_path: Path) -> None:
    counts = kill_campaign(tmp_path, kills=50, seed=20261201)
    assert counts["worker_errors"] == 0, counts["problems"]
    assert counts["kills"] == 50
    assert counts["torn"] == 0, counts["problems"]
    assert counts["switches"] > 0  # the kills landed while the worker was switching
    # the next publish cleans up whatever the killed workers left and succeeds
    build = tmp_path / "build" / "fixture"
    write_token(build, "after-kills")
    release = publish(
        build,
        tmp_path / "manifests" / "corpus-fixture.json",
        tmp_path / "selection.json",
        tmp_path / "releases",
    )
    assert resolve_current(tmp_path / "releases", use_cache=False).id == release.id
    assert not [p for p in (tmp_path / "releases").iterdir() if p.name.startswith(".staging-")]


def test_readers_during_switches_never_mix_versions(tmp_path: Path) -> None:
    releases = tmp_path / "releases"
    build, manifest, selection = make_build(tmp_path, "alpha")
    rel_a = publish(build, manifest, selection, releases)
    write_token(build, "beta")
    rel_b = publish(build, manifest, selection, releases)
    token_of = {rel_a.id: "alpha", rel_b.id: "beta"}
    switches = 100
    writer = subprocess.Popen(
        [
            sys.executable,
            str(HERE),
            "switch-loop",
            str(tmp_path),
            str(switches),
            rel_a.id,
            rel_b.id,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert writer.stdout is not None
    writer.stdout.readline()
    reads = [0, 0]
    mixed: list[str] = []
    seen_ids: set[str] = set()
    errors: list[BaseException] = []

    def reader(slot: int) -> None:
        try:
            while writer.poll() is None:
                release = resolve_current(releases)
                release_id, results, lexical_token = fake_search(release, "john cena")
                token = token_of[release_id]
                seen_ids.add(release_id)
                reads[slot] += 1
                if (
                    results != [f"fixture:1#{token}", f"fixture:2#{token}"]
                    or lexical_token != token
                ):
                    mixed.append(f"{release_id}: {results} {lexical_token}")
        except BaseException as exc:  # reported below, not swallowed
            errors.append(exc)

    threads = [threading.Thread(target=reader, args=(slot,)) for slot in range(2)]
    for thread in threads:
        thread.start()
    _, stderr = writer.communicate(timeout=120)
    for thread in threads:
        thread.join()
    assert writer.returncode == 0, stderr.decode()
    assert errors == []
    assert mixed == []
    assert sum(reads) > 0
    assert seen_ids == {rel_a.id, rel_b.id}  # the readers really ran across switches
    assert len([e for e in read_history(releases) if e["action"] == "rollback"]) == switches
    assert release_token(resolve_current(releases)) in {"alpha", "beta"}
