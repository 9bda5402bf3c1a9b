"""The resumable embedding cache: a killed build keeps its finished shards, a rebuild embeds only
what is missing, and the assembled matrix matches a one-pass build."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from mambomeme.corpus.ingest import load_items
from mambomeme.errors import IndexError_
from mambomeme.index.dense import DenseFiles, Encoder, build_dense, document
from mambomeme.index.embed_cache import EmbeddingCache, document_key, embed_with_cache


class Killed(Exception):
    pass


def test_a_killed_build_resumes_from_its_shards(fixture_build: Path, tmp_path: Path) -> None:
    items = load_items(fixture_build)[:40]
    docs = [document(i) for i in items]
    encoder = Encoder("cpu")
    keys = [document_key("model", d) for d in docs]
    calls: list[int] = []

    def dying(texts: Sequence[str]) -> np.ndarray:
        if len(calls) == 2:
            raise Killed  # the third shard never finishes
        calls.append(len(texts))
        return encoder.encode(texts)

    cache = EmbeddingCache(tmp_path / "cache", encoder.dimension)
    with pytest.raises(Killed):
        embed_with_cache(docs, keys, cache, dying, shard_size=16)
    assert calls == [16, 16]

    resumed = EmbeddingCache(tmp_path / "cache", encoder.dimension)  # a new process
    assert len(resumed) == 32
    matrix, embedded = embed_with_cache(docs, keys, resumed, encoder.encode, shard_size=16)
    assert embedded == len(set(keys)) - 32  # only the unfinished shard (reposts share a key)
    assert len(set(keys)) > 32
    one_pass = encoder.encode(docs)
    assert np.min(np.sum(matrix * one_pass, axis=1)) > 0.99999

    again, embedded = embed_with_cache(docs, keys, resumed, encoder.encode, shard_size=16)
    assert embedded == 0 and np.array_equal(again, matrix)


def test_build_dense_with_cache_embeds_only_new_documents(
    fixture_build: Path, tmp_path: Path
) -> None:
    items = load_items(fixture_build)[:12]
    encoder = Encoder("cpu")
    first = build_dense(
        items, DenseFiles.in_dir(tmp_path / "a"), encoder, 8, "c", cache_dir=tmp_path / "cache"
    )
    # another index over the same documents plus one ablation elsewhere: nothing new to embed
    second = build_dense(
        items, DenseFiles.in_dir(tmp_path / "b"), encoder, 8, "c", cache_dir=tmp_path / "cache"
    )
    assert (first["embedded_now"], second["embedded_now"]) == (12, 0)
    assert second["documents_sha256"] == first["documents_sha256"]


def test_a_shard_without_vectors_is_named(tmp_path: Path) -> None:
    (tmp_path / "shard-0.keys.json").write_text('["k"]', encoding="utf-8")
    with pytest.raises(IndexError_, match="shard-0"):
        EmbeddingCache(tmp_path, 384)
