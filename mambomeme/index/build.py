"""Index build entry points used by the DVC stages (thin wrappers over lexical and dense)."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mambomeme.config import DenseBuildParams
from mambomeme.corpus.ingest import load_items
from mambomeme.corpus.manifest import sha256_file, write_json_atomic
from mambomeme.index.document_encoder import EncoderSpec
from mambomeme.index.executor import IN_PROCESS, ExecutorConfig
from mambomeme.index.lexical import LEXICAL_INDEX_VERSION, build_lexical

DENSE_DIR = "dense"


def build_lexical_index(
    build_dir: Path, manifest: Path, weights: Mapping[str, float]
) -> dict[str, Any]:
    items = load_items(build_dir)
    path = build_dir / "lexical.sqlite"
    build_lexical(items, path, weights)
    info = {
        "version": LEXICAL_INDEX_VERSION,
        "count": len(items),
        "weights": dict(weights),
        "corpus_manifest_sha256": sha256_file(manifest),
        "items_sha256": sha256_file(build_dir / "items.parquet"),
    }
    write_json_atomic(build_dir / "lexical.json", info)
    return info


def build_dense_indexes(
    build_dir: Path,
    manifest: Path,
    batch_size: int,
    device: str,
    ablations: Mapping[str, Sequence[str]],
    memes_without: Sequence[str] = (),
    max_seq_length: int | None = None,
    cache_dir: Path | None = None,
    shard_size: int = DenseBuildParams.shard_size,
    document_encoder: str = DenseBuildParams.document_encoder,
    executor: ExecutorConfig = IN_PROCESS,
) -> list[dict[str, Any]]:
    """The full dense index plus one per ablation (each leaves its fields out of the document).

    `memes_without` leaves fields out of meme documents only (memes-full drops the per-template
    knowledge text from its 378k meme documents to make CPU embedding affordable; the template
    items keep it, and the lexical route still has it); `max_seq_length` caps the model's input
    length. Both go to the manifest. `cache_dir`/`shard_size`: the resumable embedding cache.
    `document_encoder`: torch or onnx (exported to a temporary folder first,
    index/document_encoder.py); `executor`: in-process or Ray (index/executor.py)."""
    with tempfile.TemporaryDirectory(prefix="mambomeme-document-encoder-") as scratch:
        return _build_dense_indexes(
            build_dir, manifest, batch_size, ablations, memes_without, cache_dir, shard_size,
            _encoder_spec(document_encoder, device, max_seq_length, Path(scratch)), executor,
        )  # fmt: skip


def _encoder_spec(kind: str, device: str, max_seq_length: int | None, scratch: Path) -> EncoderSpec:
    from mambomeme.index.document_encoder import export_for_documents

    if kind != "onnx":
        return EncoderSpec(kind, device, max_seq_length)
    folder = export_for_documents(scratch / "onnx", max_seq_length)
    return EncoderSpec(kind, device, max_seq_length, str(folder))


def _build_dense_indexes(
    build_dir: Path,
    manifest: Path,
    batch_size: int,
    ablations: Mapping[str, Sequence[str]],
    memes_without: Sequence[str],
    cache_dir: Path | None,
    shard_size: int,
    spec: EncoderSpec,
    executor: ExecutorConfig,
) -> list[dict[str, Any]]:
    from mambomeme.index.dense import DenseFiles, build_dense
    from mambomeme.index.executor import embedder

    items = load_items(build_dir)
    encoder = spec.open()
    embed = embedder(spec, executor, encoder)
    corpus_sha = sha256_file(manifest)
    memes = frozenset(memes_without)
    variants: list[tuple[str, frozenset[str]]] = [("", frozenset())] + [
        (n, frozenset(f)) for n, f in sorted(ablations.items())
    ]
    keep = {DenseFiles.in_dir(build_dir / DENSE_DIR, name) for name, _ in variants}
    for stale in sorted((build_dir / DENSE_DIR).glob("dense*")):  # the folder persists (dvc.yaml)
        if not any(stale in (f.matrix, f.ids, f.manifest) for f in keep):
            stale.unlink()
    built = []
    for name, without in variants:
        files = DenseFiles.in_dir(build_dir / DENSE_DIR, name)
        built.append(
            build_dense(
                items,
                files,
                encoder,
                batch_size,
                corpus_sha,
                without,
                memes,
                cache_dir,
                shard_size,
                embed,
                spec.kind,
            )
        )
    return built
