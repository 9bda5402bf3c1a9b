"""Map records through actors that open something heavy once, in this process or on Ray Data.

The build's map steps (embedding: index/executor.py; safety scoring: models/safety/features.py
and signals.py; OCR of a user folder: library/ocr_map.py) share this seam. `map_on_ray` sends
each record (one whole batch: a list of documents, a slice of items, a few image paths) as one
row of a Ray dataset through `map_batches` with an actor pool (`ActorPoolStrategy`): each actor
calls `opener()` once (load a model, an OCR engine) and `work(handle, record)` per record. The
results come back in any order and are put back by record number; a number missing is an
ExecutorError, never a shorter list. Records and results travel pickled, so NumPy arrays come
back bit for bit.

`build.executor: in-process` (the default) never imports Ray. With `build.ray_address` empty a
step starts a local Ray (`build.ray_cpus` CPUs, 0 = all) and stops it afterwards; with an
address (`auto`, `ray://head:10001`) it joins that cluster (docs/scaling.md). A caller that runs
several jobs in a row holds one `ray_session` around them, so Ray starts once.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np

import mambomeme
from mambomeme.errors import ExecutorError

EXECUTORS = ("in-process", "ray")
MAX_BLOCKS = 64  # dataset blocks: records are spread over at most this many

Record = TypeVar("Record")
Handle = TypeVar("Handle")
Result = TypeVar("Result")


@dataclass(frozen=True)
class ExecutorConfig:
    """params build.executor, build.ray_address, build.ray_cpus, build.ray_actors."""

    kind: str = "in-process"
    ray_address: str = ""  # empty: a local Ray started (and stopped) by the step
    ray_cpus: int = 0  # CPUs of a local Ray; 0 = every core
    ray_actors: int = 0  # actors per map step; 0 = one per CPU of the Ray cluster

    def __post_init__(self) -> None:
        if self.kind not in EXECUTORS:
            raise ExecutorError(
                f"params build.executor is {self.kind!r}; expected one of {EXECUTORS}"
            )
        if self.ray_cpus < 0 or self.ray_actors < 0:
            raise ExecutorError("params build.ray_cpus and build.ray_actors must be >= 0")

    @classmethod
    def from_params(cls, build: Mapping[str, Any]) -> ExecutorConfig:
        return cls(
            str(build.get("executor", "in-process")),
            str(build.get("ray_address", "") or ""),
            int(build.get("ray_cpus", 0)),
            int(build.get("ray_actors", 0)),
        )

    def as_params(self) -> dict[str, Any]:
        """The params `build` block this config reads back from (`from_params`)."""
        return {
            "executor": self.kind,
            "ray_address": self.ray_address,
            "ray_cpus": self.ray_cpus,
            "ray_actors": self.ray_actors,
        }


IN_PROCESS = ExecutorConfig()


class _MapActor(Generic[Handle, Record, Result]):
    """One Ray actor: `opener()` once, then `work(handle, record)` for each row's record."""

    def __init__(
        self, opener: Callable[[], Handle], work: Callable[[Handle, Record], Result]
    ) -> None:
        self.handle = opener()
        self.work = work

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        results = [
            pickle.dumps(self.work(self.handle, pickle.loads(payload)))
            for payload in batch["payload"]
        ]
        return {"number": batch["number"], "result": np.array(results, dtype=object)}


def map_on_ray(
    records: Sequence[Record],
    opener: Callable[[], Handle],
    work: Callable[[Handle, Record], Result],
    executor: ExecutorConfig,
    what: str,
) -> list[Result]:
    """[work(handle, r) for r in records] computed by a Ray Data actor pool (at most one actor
    per record), in input order; `what` names the step in errors ("embedding batches")."""
    if not records:
        return []
    import ray

    with ray_session(executor):
        resources: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]
        cpus = int(resources.get("CPU", 1))
        actors = max(1, min(executor.ray_actors or cpus, len(records)))
        rows = [
            {"number": number, "payload": pickle.dumps(record)}
            for number, record in enumerate(records)
        ]
        dataset = ray.data.from_items(rows, override_num_blocks=min(len(rows), MAX_BLOCKS))
        mapped = dataset.map_batches(
            _MapActor,
            fn_constructor_args=(opener, work),
            batch_size=1,
            batch_format="numpy",
            compute=ray.data.ActorPoolStrategy(size=actors),
            num_cpus=max(1, cpus // actors),
        )
        results: dict[int, Result] = {}
        for batch in mapped.iter_batches(batch_size=None, batch_format="numpy"):
            for number, raw in zip(batch["number"], batch["result"], strict=True):
                results[int(number)] = pickle.loads(raw)
    return in_order(results, len(records), what)


def in_order(results: Mapping[int, Result], sent: int, what: str) -> list[Result]:
    """The results of records 0..sent-1 in that order; ExecutorError naming the missing
    record numbers when Ray gave back fewer (or others) than it was sent."""
    missing = [n for n in range(sent) if n not in results]
    extra = sorted(n for n in results if not 0 <= n < sent)
    if missing or extra:
        listed = ", ".join(str(n) for n in missing[:10]) + (" ..." if len(missing) > 10 else "")
        raise ExecutorError(
            f"ray {what}: {sent - len(missing)} of {sent} came back"
            + (f" (missing {listed})" if missing else "")
            + (f"; unexpected numbers {extra[:10]}" if extra else "")
        )
    return [results[n] for n in range(sent)]


@contextmanager
def ray_session(executor: ExecutorConfig) -> Iterator[None]:
    """Ray connected for the block (started here unless already running; stopped afterwards
    when started here). Nothing happens for the in-process executor."""
    if executor.kind != "ray":
        yield
        return
    import ray

    started = start_ray(executor)
    try:
        yield
    finally:
        if started:
            ray.shutdown()


def start_ray(executor: ExecutorConfig) -> bool:
    """Connect to build.ray_address, or start a local Ray; True when this call started it."""
    import ray

    if ray.is_initialized():
        return False
    package_root = str(Path(mambomeme.__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH", "")) if p)
    common: dict[str, Any] = {
        "include_dashboard": False,
        "log_to_driver": False,
        "configure_logging": False,
    }
    if executor.ray_address:
        ray.init(address=executor.ray_address, **common)
    else:
        ray.init(
            num_cpus=executor.ray_cpus or os.cpu_count() or 1,
            runtime_env={"env_vars": {"PYTHONPATH": path, "HF_HUB_OFFLINE": "1"}},
            **common,
        )
    return True
