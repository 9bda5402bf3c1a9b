"""Measurements that need a fresh process: cold start and the build stage.

Each runs `python -c <script>` in a subprocess, so imports, index opening and model loading are
paid as a user pays them. The child prints one JSON line per milestone with `time.time()` and its
own peak resident memory (VmHWM from /proc/self/status, KiB; `ru_maxrss` only where there is
no /proc: on Linux ru_maxrss survives fork + exec and would show the parent's peak). The parent
subtracts the wall-clock time it took just before starting the child, so "cold start" includes
interpreter start-up.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from mambomeme.errors import MamboMemeError

_PRELUDE = """
import json, sys, time
def peak_kib():
    # VmHWM is this process image's own peak; getrusage's ru_maxrss survives fork + exec on
    # Linux and would report the (large) benchmark parent's peak instead
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
def mark(name, **extra):
    record = {"mark": name, "t": time.time(), "maxrss_kib": peak_kib(), **extra}
    print(json.dumps(record), flush=True)
mark("interpreter")
from pathlib import Path
"""

COLD_START = (
    _PRELUDE
    + """
from mambomeme.config import load_params
from mambomeme.search.engine import Engine
params = load_params(Path(sys.argv[1]))
engine = Engine.open(Path(sys.argv[2]), params)
mark("engine_open")
response = engine.search([sys.argv[3]], limit=10, system="bm25")
mark("first_lexical", results=len(response.results))
response = engine.search([sys.argv[3]], limit=10, system="hybrid")
mark("first_hybrid", results=len(response.results))
"""
)

BUILD_LEXICAL = (
    _PRELUDE
    + """
from mambomeme.config import load_params
from mambomeme.corpus.ingest import load_items
from mambomeme.index.lexical import build_lexical
params = load_params(Path(sys.argv[1]))
items = load_items(Path(sys.argv[2]))
mark("items_loaded", count=len(items))
start = time.perf_counter()
build_lexical(items, Path(sys.argv[3]), params["lexical"]["weights"])
mark("lexical_built", count=len(items), seconds=time.perf_counter() - start)
from mambomeme.index.term_lists import build_term_lists
start = time.perf_counter()
info = build_term_lists(Path(sys.argv[3]), Path(sys.argv[4]), progress=False)
mark("term_lists_built", postings=info["postings"], seconds=time.perf_counter() - start)
"""
)

BUILD_EMBED = (
    _PRELUDE
    + """
from mambomeme.corpus.ingest import load_items
from mambomeme.index.dense import Encoder, document
items = load_items(Path(sys.argv[1]))[: int(sys.argv[2])]
docs = [document(item) for item in items]
encoder = Encoder("cpu")
encoder.encode(docs[:8])  # warm-up: first-call allocations are not throughput
mark("model_loaded")
start = time.perf_counter()
encoder.encode(docs, batch_size=int(sys.argv[3]))
mark("embedded", count=len(docs), seconds=time.perf_counter() - start)
"""
)


def run_child(script: str, args: list[str], timeout_s: float = 1800.0) -> dict[str, dict[str, Any]]:
    """Run `script` in a fresh interpreter; milestones keyed by name, with `after_s` added."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    started = time.time()
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-5:]
        raise MamboMemeError(f"benchmark subprocess failed ({done.returncode}): {' | '.join(tail)}")
    marks: dict[str, dict[str, Any]] = {}
    for line in done.stdout.splitlines():
        if line.startswith('{"mark"'):
            record = json.loads(line)
            record["after_s"] = record.pop("t") - started
            marks[record.pop("mark")] = record
    return marks


def cold_start(params_path: Path, build_dir: Path, query: str, repeats: int = 3) -> dict[str, Any]:
    """Seconds from process start to first lexical and first hybrid result (best and all runs)."""
    runs = [
        run_child(COLD_START, [str(params_path), str(build_dir), query]) for _ in range(repeats)
    ]
    out: dict[str, Any] = {"query": query, "repeats": repeats}
    for name in ("interpreter", "engine_open", "first_lexical", "first_hybrid"):
        values = [round(r[name]["after_s"], 3) for r in runs]
        out[f"{name}_s"] = {"min": min(values), "runs": values}
    out["hybrid_process_maxrss_mib"] = round(runs[-1]["first_hybrid"]["maxrss_kib"] / 1024, 1)
    out["lexical_process_maxrss_mib"] = round(runs[-1]["first_lexical"]["maxrss_kib"] / 1024, 1)
    return out


def build_lexical_figures(params_path: Path, build_dir: Path, scratch: Path) -> dict[str, Any]:
    """Time a full rebuild of the lexical index and its term lists into `scratch` (the real
    ones are left alone)."""
    target, lists = scratch / "lexical.sqlite", scratch / "term-lists"
    marks = run_child(BUILD_LEXICAL, [str(params_path), str(build_dir), str(target), str(lists)])
    built, terms = marks["lexical_built"], marks["term_lists_built"]
    size = target.stat().st_size
    lists_size = sum(p.stat().st_size for p in lists.iterdir())
    target.unlink()
    shutil.rmtree(lists)
    return {
        "items": built["count"],
        "seconds": round(built["seconds"], 2),
        "items_per_s": round(built["count"] / built["seconds"], 1),
        "peak_rss_mib": round(built["maxrss_kib"] / 1024, 1),
        "index_bytes": size,
        "term_lists": {
            "postings": terms["postings"],
            "seconds": round(terms["seconds"], 2),
            "bytes": lists_size,
            "peak_rss_mib": round(terms["maxrss_kib"] / 1024, 1),
        },
    }


def build_embedding_figures(build_dir: Path, count: int, batch_size: int) -> dict[str, Any]:
    """Time a CPU encode of the first `count` items' dense documents (the index_dense work)."""
    marks = run_child(BUILD_EMBED, [str(build_dir), str(count), str(batch_size)])
    done = marks["embedded"]
    return {
        "items": done["count"],
        "batch_size": batch_size,
        "device": "cpu",
        "seconds": round(done["seconds"], 2),
        "items_per_s": round(done["count"] / done["seconds"], 1),
        "peak_rss_mib": round(done["maxrss_kib"] / 1024, 1),
    }


def disk_sizes(build_dir: Path) -> dict[str, int]:
    """Bytes on disk of the corpus table and each index."""
    sizes: dict[str, int] = {}
    for name in ("items.parquet", "lexical.sqlite", "dense/dense.npy"):
        path = build_dir / name
        if path.exists():
            sizes[name] = path.stat().st_size
    variants = (
        sorted((build_dir / "dense").glob("dense-no-*.npy"))
        if (build_dir / "dense").is_dir()
        else []
    )
    if variants:
        sizes["dense/dense-no-*.npy (all ablations)"] = sum(p.stat().st_size for p in variants)
    lists = build_dir / "term-lists"
    if lists.is_dir():
        sizes["term-lists/"] = sum(p.stat().st_size for p in lists.iterdir())
    return sizes
