"""The safety model's features per item (FEATURE_VERSION; model.py describes the model):
the MiniLM embedding of the item's own text (`safety_document`, through `embedder`), the rules'
decision as one-hot categories 1-7 plus "any" (`rule_features`), the template group's smoothed
unsafe rate (`Priors`) and the extra signal columns (signals.py), stacked by `feature_matrix`.
Used alike by training (train.py) and by applying the model (model.apply).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mambomeme.corpus.safety import SafetyClassifier
from mambomeme.corpus.schema import Item
from mambomeme.index.ray_map import IN_PROCESS, ExecutorConfig

FEATURE_VERSION = "safety-features-3"  # -2 was the unadopted zero-shot branch
RULE_CATEGORIES = ("1", "2", "3", "4", "5", "6", "7")
OWN_TEXT_WITHOUT = frozenset({"template_aliases", "template_visual", "template_meaning"})
MAX_SEQ_LENGTH = 128  # = memes-full's dense documents, so its embedding cache is shared
PRIOR_STRENGTH = 5.0

Embed = Callable[[Sequence[str]], np.ndarray]


def safety_document(item: Item) -> str:
    """The text the model embeds: the item's own fields (dense.document without knowledge)."""
    from mambomeme.index.dense import document

    return document(item, OWN_TEXT_WITHOUT)


def rule_features(item: Item, rules: SafetyClassifier) -> np.ndarray:
    """One-hot rule category (1-7) and 'any rule hit', from the lexicon and combos only."""
    decision = rules.classify(item.title, item.ocr_text, item.meaning, item.visual_description)
    out = np.zeros(len(RULE_CATEGORIES) + 1, dtype=np.float32)
    if decision.safety == "unsafe":
        out[-1] = 1.0
        if decision.category in RULE_CATEGORIES:
            out[RULE_CATEGORIES.index(decision.category)] = 1.0
    return out


@dataclass(frozen=True)
class Priors:
    """Smoothed unsafe rate per template group from training labels."""

    overall: float
    counts: Mapping[str, tuple[int, int]]  # group -> (unsafe, labelled)

    @classmethod
    def fit(cls, groups: Sequence[str], y: Sequence[int] | np.ndarray) -> Priors:
        counts: dict[str, list[int]] = {}
        for group, label in zip(groups, y, strict=True):
            c = counts.setdefault(group, [0, 0])
            c[0] += int(label)
            c[1] += 1
        overall = float(np.mean(y)) if len(y) else 0.0
        return cls(overall, {g: (c[0], c[1]) for g, c in counts.items()})

    def value(self, group: str, own_label: int | None = None) -> float:
        unsafe, n = self.counts.get(group, (0, 0))
        if own_label is not None and n:  # leave the item's own label out
            unsafe, n = unsafe - own_label, n - 1
        return (unsafe + PRIOR_STRENGTH * self.overall) / (n + PRIOR_STRENGTH)


def feature_matrix(
    embeddings: np.ndarray, rules: np.ndarray, priors: np.ndarray, extra: np.ndarray | None = None
) -> np.ndarray:
    """[embedding | rule one-hots | template prior | extra signal columns]."""
    blocks = [embeddings, rules, priors.reshape(-1, 1)]
    if extra is not None:
        blocks.append(extra.reshape(len(embeddings), -1))
    return np.hstack(blocks).astype(np.float64)


def embedder(
    cache_dir: Path | None,
    batch_size: int,
    device: str,
    shard_size: int,
    executor: ExecutorConfig = IN_PROCESS,
) -> Embed:
    """MiniLM embeddings of safety documents (max_seq_length 128), through the build's
    embedding cache when one is configured (shared with memes-full's dense documents).

    With the ray executor the encoder is opened once per Ray actor, never here: each call's
    texts (the cache's missing shard, or all of them) are cut into the batches the library's
    own `encode(texts, batch_size)` forms (document_encoder.sentence_transformers_batches) and
    embedded by the actors, so the vectors are the in-process ones byte for byte."""
    from mambomeme.index.dense import Encoder, model_dimension, weights_sha256
    from mambomeme.index.embed_cache import EmbeddingCache, document_key, embed_with_cache

    encode: Callable[[Sequence[str]], np.ndarray]
    if executor.kind == "ray":
        encode = _ray_encode(batch_size, device, executor)
        max_seq_length, dimension = MAX_SEQ_LENGTH, model_dimension()
    else:
        encoder = Encoder(device, MAX_SEQ_LENGTH)
        max_seq_length, dimension = encoder.max_seq_length, encoder.dimension

        def encode(texts: Sequence[str]) -> np.ndarray:
            return encoder.encode(texts, batch_size=batch_size)

    def embed(texts: Sequence[str]) -> np.ndarray:
        if cache_dir is None:
            return encode(texts)
        model_key = f"{weights_sha256()}:{max_seq_length}"
        cache = EmbeddingCache(cache_dir / model_key[:16], dimension)
        keys = [document_key(model_key, t) for t in texts]
        matrix, _ = embed_with_cache(texts, keys, cache, encode, shard_size)
        return matrix

    return embed


def _ray_encode(
    batch_size: int, device: str, executor: ExecutorConfig
) -> Callable[[Sequence[str]], np.ndarray]:
    from mambomeme.index.document_encoder import EncoderSpec, sentence_transformers_batches
    from mambomeme.index.executor import embed_batches_on_ray

    spec = EncoderSpec("torch", device, MAX_SEQ_LENGTH)

    def encode(texts: Sequence[str]) -> np.ndarray:
        slices = sentence_transformers_batches(texts, batch_size)
        return embed_batches_on_ray(texts, slices, spec, executor)

    return encode


def embedder_from_params(dense: Mapping[str, Any], executor: ExecutorConfig = IN_PROCESS) -> Embed:
    """`embedder` as params `dense` configures it (cache_dir, batch_size, device, shard_size)
    on `executor` (params `build`)."""
    cache = Path(dense["cache_dir"]) if dense.get("cache_dir") else None
    return embedder(
        cache, int(dense["batch_size"]), str(dense["device"]), int(dense["shard_size"]), executor
    )
