"""A content-addressed cache of document vectors, so an interrupted or repeated build resumes.

Embedding 378k memes-full documents takes hours on two CPU cores. The dense build therefore
embeds in shards of `shard_size` documents and writes each finished shard here at once
(vectors + keys, atomically, tmp + rename); a killed build loses at most the shard in progress,
and the next build embeds only documents whose key is missing. A key is the sha256 of the model
weights' sha256, the length cap and the document text, so a vector is reused only for exactly
the same input to exactly the same model. The cache lives outside DVC's outputs (it is a build
accelerator, not an artifact: the matrix it assembles is what the stage outputs and checksums).

Vectors computed in different batches can differ from a one-pass build in the last float bits
(padding changes the summation order); cosines agree to ~1e-6.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from tqdm import tqdm

from mambomeme.errors import IndexError_

SHARD_GLOB = "shard-*.keys.json"


def document_key(model_key: str, text: str) -> str:
    return hashlib.sha256(f"{model_key}\x1f{text}".encode()).hexdigest()[:32]


class EmbeddingCache:
    """Shards `shard-<n>.npy` (float32, n x dim) with `shard-<n>.keys.json` (their keys)."""

    def __init__(self, root: Path, dimension: int) -> None:
        self.root = root
        self.dimension = dimension
        self._where: dict[str, tuple[int, int]] = {}
        self._shards: dict[int, np.ndarray] = {}
        root.mkdir(parents=True, exist_ok=True)
        self._next = 0
        for keys_file in sorted(root.glob(SHARD_GLOB)):
            number = int(keys_file.name.split("-")[1].split(".")[0])
            self._next = max(self._next, number + 1)
            matrix_file = root / f"shard-{number}.npy"
            if not matrix_file.exists():  # keys are written last: an orphan is a torn write
                raise IndexError_(f"{keys_file}: shard vectors missing ({matrix_file})")
            keys = json.loads(keys_file.read_text(encoding="utf-8"))
            for row, key in enumerate(keys):
                self._where.setdefault(key, (number, row))

    def __contains__(self, key: str) -> bool:
        return key in self._where

    def __len__(self) -> int:
        return len(self._where)

    def add(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        if vectors.shape != (len(keys), self.dimension):
            raise IndexError_(f"cache add: {vectors.shape} vectors for {len(keys)} keys")
        number = self._next
        self._next += 1
        matrix_file = self.root / f"shard-{number}.npy"
        tmp = self.root / f"shard-{number}.tmp.npy"
        np.save(tmp, np.ascontiguousarray(vectors, dtype=np.float32), allow_pickle=False)
        tmp.replace(matrix_file)
        keys_tmp = self.root / f"shard-{number}.keys.tmp"
        keys_tmp.write_text(json.dumps(list(keys)), encoding="utf-8")
        keys_tmp.replace(self.root / f"shard-{number}.keys.json")
        for row, key in enumerate(keys):
            self._where.setdefault(key, (number, row))

    def _shard(self, number: int) -> np.ndarray:
        shard = self._shards.get(number)
        if shard is None:
            shard = np.load(self.root / f"shard-{number}.npy", allow_pickle=False)
            if shard.dtype != np.float32 or shard.ndim != 2 or shard.shape[1] != self.dimension:
                raise IndexError_(f"{self.root}/shard-{number}.npy: unexpected {shard.shape}")
            self._shards[number] = shard
        return shard

    def gather(self, keys: Sequence[str]) -> np.ndarray:
        """The vectors of `keys`, in order (every key must be cached)."""
        out = np.empty((len(keys), self.dimension), dtype=np.float32)
        for i, key in enumerate(keys):
            number, row = self._where[key]
            out[i] = self._shard(number)[row]
        return out


def embed_with_cache(
    texts: Sequence[str],
    keys: Sequence[str],
    cache: EmbeddingCache,
    encode: Callable[[Sequence[str]], np.ndarray],
    shard_size: int,
) -> tuple[np.ndarray, int]:
    """Vectors for `texts` (one per key), embedding only keys missing from the cache, shard by
    shard. Returns the matrix and how many documents were embedded now."""
    missing: dict[str, str] = {}
    for key, text in zip(keys, texts, strict=True):
        if key not in cache and key not in missing:
            missing[key] = text
    todo = list(missing.items())
    shards = range(0, len(todo), shard_size)
    for start in tqdm(shards, desc="embedding shards", unit="shard", disable=not todo):
        chunk = todo[start : start + shard_size]
        cache.add([k for k, _ in chunk], encode([t for _, t in chunk]))
    return cache.gather(keys), len(todo)
