"""The trained reranker at serving time: an ONNX cross-encoder, verified at load.

    build/reranker/
      model.onnx       the fine-tuned all-MiniLM-L6-v2 cross-encoder (one logit per pair)
      tokenizer.json   the base model's tokenizer (pairs: [CLS] query [SEP] text [SEP])
      manifest.json    data versions, base weights sha256, hyper-parameters, validation
                       metrics, the ONNX-vs-torch probe, and the sha256 of every file

`open_reranker` returns None when the folder or its manifest is absent (a build without a
reranker serves everything else), and refuses, naming the file, a folder whose manifest is
malformed or whose files do not match it. Only onnxruntime and tokenizers are imported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mambomeme.index.query_encoder import cpu_session, verified_bytes
from mambomeme.models.reranker.manifest import (
    MANIFEST_NAME,
    ONNX_NAME,
    TOKENIZER_NAME,
    read_manifest,
)

INPUTS = ("input_ids", "attention_mask", "token_type_ids")


class Reranker:
    """Scores (query, text) pairs with the verified ONNX graph: one logit per text, higher is
    more relevant. Tokenised as in training: tokenizer.json, longest-first truncation to the
    manifest's max_length, padded to the batch's longest pair."""

    def __init__(
        self, folder: Path, threads: int | None = 1, manifest: Mapping[str, Any] | None = None
    ) -> None:
        from tokenizers import Tokenizer

        self.folder = Path(folder)
        self.manifest = dict(manifest) if manifest is not None else read_manifest(self.folder)
        files = self.manifest["files"]
        graph = verified_bytes(self.folder / ONNX_NAME, files.get(ONNX_NAME), "reranker")
        tokenizer = verified_bytes(
            self.folder / TOKENIZER_NAME, files.get(TOKENIZER_NAME), "reranker"
        )
        self.max_length = int(self.manifest["hyper_parameters"]["max_length"])
        self._tokenizer = pair_tokenizer(
            Tokenizer.from_str(tokenizer.decode("utf-8")), self.max_length
        )
        self._session = cpu_session(graph, threads)

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """float32 logits, one per text, in input order (one ONNX Runtime batch)."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        feed = encode_pairs(self._tokenizer, [(query, t) for t in texts])
        logits = self._session.run(["logits"], feed)[0]
        return np.asarray(logits, dtype=np.float32).reshape(-1)


def pair_tokenizer(tokenizer: Any, max_length: int) -> Any:
    """`tokenizer` truncating pairs longest-first to `max_length`, padding to the longest."""
    tokenizer.enable_truncation(max_length, strategy="longest_first")
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    return tokenizer


def encode_pairs(tokenizer: Any, pairs: Sequence[tuple[str, str]]) -> dict[str, np.ndarray]:
    """The model inputs (int64 arrays) of `pairs`, the same for training, export and serving."""
    encoded = tokenizer.encode_batch([(q.strip(), t.strip()) for q, t in pairs])
    return {
        "input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
        "attention_mask": np.array([e.attention_mask for e in encoded], dtype=np.int64),
        "token_type_ids": np.array([e.type_ids for e in encoded], dtype=np.int64),
    }


def open_reranker(folder: Path, threads: int | None = 1) -> Reranker | None:
    """The reranker in `folder`; None when there is none (no manifest): serving falls back to
    the fused order. A folder that is there but broken is refused (ArtifactIntegrityError)."""
    if not (Path(folder) / MANIFEST_NAME).exists():
        return None
    return Reranker(folder, threads)
