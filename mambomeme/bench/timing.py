"""Latency samples: timed calls and their nearest-rank percentiles (every bench module's)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np

from mambomeme.errors import MamboMemeError

T = TypeVar("T")


def percentiles(samples_ms: Sequence[float]) -> dict[str, float]:
    """p50, p95, mean and max of the samples (nearest-rank percentiles)."""
    values = np.asarray(samples_ms, dtype=np.float64)
    if values.size == 0:
        raise MamboMemeError("no timing samples")
    p50, p95 = np.percentile(values, [50, 95], method="inverted_cdf")
    return {
        "p50": round(float(p50), 3),
        "p95": round(float(p95), 3),
        "mean": round(float(values.mean()), 3),
        "max": round(float(values.max()), 3),
        "n": int(values.size),
    }


def timed(fn: Callable[[T], object], inputs: Sequence[T], warmup: int) -> list[float]:
    """Milliseconds per call of fn over `inputs`, after `warmup` untimed calls."""
    for value in inputs[:warmup]:
        fn(value)
    samples = []
    for value in inputs:
        start = time.perf_counter()
        fn(value)
        samples.append((time.perf_counter() - start) * 1000.0)
    return samples
