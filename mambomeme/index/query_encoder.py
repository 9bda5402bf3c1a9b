"""Query encoding with ONNX Runtime: the dense route's model exported once, verified at load.

Documents are embedded by torch (dense.py, the index_dense stage); queries may be encoded by
the same all-MiniLM-L6-v2 exported to ONNX: transformer + mean pooling over the attention mask
+ L2 normalisation in one graph (torch.onnx.export, opset 17, dynamic batch and sequence axes),
run by onnxruntime on the CPU with one intra-op thread. The tokenizer is the model package's own
tokenizer.json (the fast tokenizer sentence-transformers uses), copied beside the graph so a
build or a release folder is self-contained. Neither torch nor transformers is imported to
encode, only to export. int8 quantisation is deliberately not used: it was faster but moved
query embeddings to cosine 0.89-0.95 of torch's.

    build/<corpus>/query-encoder/
      model.onnx        the graph with its weights
      tokenizer.json    the model package's tokenizer
      manifest.json     model id, package version, weights sha256, library versions, opset,
                        file sha256s, and the agreement with torch on PROBE_SENTENCES

`params dense.query_encoder` picks `onnx` or `torch` for the engine (`open_query_encoder`).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from mambomeme.corpus.manifest import sha256_file, write_json_atomic
from mambomeme.errors import ArtifactIntegrityError, IndexError_, MamboMemeError
from mambomeme.index.dense import MODEL_ID, MODEL_PACKAGE, model_dir, weights_sha256
from mambomeme.index.integrity import CONTENT_CHECK
from mambomeme.index.verified import file_unchanged

QUERY_ENCODER_DIR = "query-encoder"
ONNX_NAME = "model.onnx"
TOKENIZER_NAME = "tokenizer.json"
MANIFEST_NAME = "manifest.json"
FORMAT = "query-encoder-onnx-1"
OPSET = 17
KINDS = ("onnx", "torch")
# An export whose probe embeddings fall below this cosine to torch's is refused (measured on
# all-MiniLM-L6-v2 float32: >= 0.9999996 on 1,000 memes-10k documents).
MIN_PROBE_COSINE = 0.9999
# Fixed probes measured at export: fixture queries, document-shaped text, accents and scripts,
# an empty string and one text longer than the 256-token cap (truncation must match).
PROBE_SENTENCES = (
    "john cena",
    "you can't see me",
    "pretending to be invisible",
    "wrestler waving hand in front of face",
    "jon sena invisible meme",
    "And his name is... the substitute teacher",
    "Du kannst mich nicht sehen",
    "Solo una galleta más",
    "title: Invisible John Cena in the family photo\npeople: John Cena\ntemplate: John Cena",
    "Ünïcödé façade naïve café, 日本語のテキスト, emoji 😀",
    "",
    "   leading and trailing spaces   ",
    " ".join(["a muscular wrestler waving his open hand in front of his face"] * 40),
)
MANIFEST_FIELDS = (
    "format",
    "model_id",
    "model_package",
    "package_version",
    "weights_sha256",
    "torch_version",
    "transformers_version",
    "onnx_version",
    "onnxruntime_version",
    "opset",
    "onnx_sha256",
    "onnx_bytes",
    "tokenizer_sha256",
    "max_seq_length",
    "dimension",
    "pooling",
    "normalised",
    "inputs",
    "output",
    "probe",
)


class QueryEncoder(Protocol):
    """What the engine needs of a query encoder (dense.Encoder and OnnxQueryEncoder)."""

    def encode(
        self, texts: Sequence[str], batch_size: int = 64, progress: bool = False
    ) -> np.ndarray: ...


def query_encoder_kind(dense: Mapping[str, Any] | None) -> str:
    """params dense.query_encoder (absent: torch, the behaviour before ONNX), checked; `dense`
    is the params `dense` block."""
    kind = str((dense or {}).get("query_encoder", "torch"))
    if kind not in KINDS:
        raise MamboMemeError(f"params dense.query_encoder is {kind!r}; expected one of {KINDS}")
    return kind


def open_query_encoder(build_dir: Path, kind: str, device: str, threads: int) -> QueryEncoder:
    """The engine's query encoder: torch (sentence-transformers) or the verified ONNX export in
    build_dir/query-encoder, refused when its weights are not those the documents were embedded
    with (build_dir/dense/dense.json)."""
    if kind == "torch":
        from mambomeme.index.dense import Encoder

        return Encoder(device, threads=threads)
    if kind == "onnx":
        folder = build_dir / QUERY_ENCODER_DIR
        return OnnxQueryEncoder(
            folder, threads, weights=documents_weights(build_dir), verified_in=build_dir
        )
    raise MamboMemeError(f"params dense.query_encoder is {kind!r}; expected one of {KINDS}")


def documents_weights(build_dir: Path) -> str | None:
    """weights_sha256 of the model that embedded the build's documents (build/dense/dense.json);
    None without a dense index or with a synthetic one (benchmarks)."""
    documents = build_dir / "dense" / "dense.json"
    if not documents.exists():
        return None
    value = json.loads(documents.read_text(encoding="utf-8")).get("weights_sha256")
    return None if value is None else str(value)


def check_query_encoder(build_dir: Path) -> None:
    """When build_dir has a query-encoder folder: its manifest is complete, every file is there
    with the manifest's sha256, and its weights are the documents' (publish calls this)."""
    folder = build_dir / QUERY_ENCODER_DIR
    if not folder.exists():
        return
    manifest = read_manifest(folder)
    for name, field in ((ONNX_NAME, "onnx_sha256"), (TOKENIZER_NAME, "tokenizer_sha256")):
        path = folder / name
        if not path.is_file():
            raise IndexError_(f"{path}: query encoder file missing")
        if sha256_file(path) != manifest[field]:
            raise IndexError_(f"{path}: checksum does not match {folder / MANIFEST_NAME}")
    _check_weights(folder, manifest, documents_weights(build_dir))


def _check_weights(folder: Path, manifest: Mapping[str, Any], documents: str | None) -> None:
    if documents is not None and documents != manifest["weights_sha256"]:
        raise IndexError_(
            f"{folder / MANIFEST_NAME}: weights_sha256 {manifest['weights_sha256']} differs "
            f"from the documents' {documents} (dense/dense.json); export the query encoder "
            "again (dvc stage export_encoder)"
        )


class OnnxQueryEncoder:
    """The exported model in ONNX Runtime, with dense.Encoder's `encode` contract: one
    L2-normalised float32 row per text, in input order, tokenised and truncated as
    sentence-transformers does (the same tokenizer.json, `max_seq_length` tokens)."""

    device = "cpu"

    def __init__(
        self,
        folder: Path,
        threads: int | None = 1,
        max_seq_length: int | None = None,
        weights: str | None = None,
        manifest: Mapping[str, Any] | None = None,
        verified_in: Path | None = None,
    ) -> None:
        """Verify `folder` (manifest complete, file sha256s match, `weights` = the manifest's
        weights_sha256 when given) and open it; `threads` = ONNX Runtime intra-op threads
        (None or 0: its default, one per core). `manifest` replaces folder/manifest.json (the
        export probes its files before it writes the manifest). `verified_in`: the served
        folder, whose remembered content check (index/verified.py, which covers this folder's
        files) lets an unchanged file skip its sha256 (0.1-0.2 s for the 90 MB graph)."""
        from tokenizers import Tokenizer

        self.folder = Path(folder)
        self.manifest = dict(manifest) if manifest is not None else read_manifest(self.folder)
        _check_weights(self.folder, self.manifest, weights)
        graph, tokenizer = (
            verified_bytes(
                self.folder / name,
                self.manifest[field],
                trusted=verified_in is not None
                and file_unchanged(verified_in, CONTENT_CHECK, self.folder / name),
            )
            for name, field in ((ONNX_NAME, "onnx_sha256"), (TOKENIZER_NAME, "tokenizer_sha256"))
        )
        self._max_seq_length = int(max_seq_length or self.manifest["max_seq_length"])
        self._tokenizer = Tokenizer.from_str(tokenizer.decode("utf-8"))
        self._tokenizer.enable_truncation(self._max_seq_length)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # to the batch's longest
        self._session = cpu_session(graph, threads)
        self._output = str(self.manifest["output"])

    def encode(
        self, texts: Sequence[str], batch_size: int = 64, progress: bool = False
    ) -> np.ndarray:
        """Embeddings of `texts` ([len(texts), dimension] float32, L2-normalised). Batches are
        formed longest first, as sentence-transformers does, so padding stays small; `progress`
        is accepted for Encoder's signature and ignored."""
        if batch_size < 1:
            raise MamboMemeError(f"batch_size must be >= 1, got {batch_size}")
        texts = list(texts)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            encoded = self._tokenizer.encode_batch([texts[i].strip() for i in rows])
            feed = {
                "input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encoded], dtype=np.int64),
            }
            out[rows] = self._session.run([self._output], feed)[0]
        return out

    @property
    def max_seq_length(self) -> int:
        return self._max_seq_length

    @property
    def dimension(self) -> int:
        return int(self.manifest["dimension"])


def read_manifest(folder: Path) -> dict[str, Any]:
    """The export manifest, refused (naming the file) when missing, malformed, incomplete or of
    another format."""
    path = Path(folder) / MANIFEST_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise IndexError_(
            f"{path}: query encoder manifest missing; export it (dvc stage export_encoder, or "
            "python stages/export_encoder.py --build <build dir>) or set dense.query_encoder: "
            "torch"
        ) from None
    except (OSError, ValueError) as exc:
        raise IndexError_(f"{path}: unreadable query encoder manifest: {exc}") from None
    if not isinstance(data, dict):
        raise IndexError_(f"{path}: not a JSON object")
    missing = [name for name in MANIFEST_FIELDS if name not in data]
    if missing:
        raise IndexError_(f"{path}: fields missing: {', '.join(missing)}")
    if data["format"] != FORMAT:
        raise IndexError_(f"{path}: field 'format' is {data['format']!r}, expected {FORMAT!r}")
    return data


def verified_bytes(
    path: Path, expected_sha256: object, what: str = "query encoder", trusted: bool = False
) -> bytes:
    """The file's bytes, read once and refused when absent or when their sha256 is not the
    manifest's (beside it); `what` names the model in the error (the reranker uses it too).
    `trusted`: the file is unchanged since a remembered content check, so its hash is skipped."""
    try:
        data = path.read_bytes()
    except OSError:
        raise ArtifactIntegrityError(str(path), f"{what} file missing") from None
    if not trusted and hashlib.sha256(data).hexdigest() != expected_sha256:
        raise ArtifactIntegrityError(
            str(path), f"checksum does not match {path.parent / MANIFEST_NAME}"
        )
    return data


def cpu_session(graph: bytes, threads: int | None) -> Any:
    """An ONNX Runtime CPU session of `graph`; `threads` = intra-op threads (None or 0: one
    per core; with more than one, the pool does not spin: the documents at build time)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    if threads:
        options.intra_op_num_threads = int(threads)
        options.inter_op_num_threads = 1
    if threads != 1:  # idle pool threads sleep instead of spinning: a bulk job on a shared host
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])


def export_query_encoder(folder: Path, max_seq_length: int | None = None) -> dict[str, Any]:
    """Export the model to `folder` (model.onnx, tokenizer.json, manifest.json written last) and
    measure it against the torch Encoder on PROBE_SENTENCES; refuse an export whose cosine to
    torch is below MIN_PROBE_COSINE. Returns the manifest."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import onnx
    import torch
    from transformers import AutoModel

    from mambomeme.index.dense import Encoder

    folder = Path(folder)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    reference = Encoder("cpu", max_seq_length)
    seq = reference.max_seq_length
    expected = reference.encode(list(PROBE_SENTENCES), batch_size=len(PROBE_SENTENCES))

    class MeanPooledNormalised(torch.nn.Module):
        """Transformer, mean pooling over the attention mask, L2 normalisation: the
        sentence-transformers modules of all-MiniLM-L6-v2 (Transformer, Pooling, Normalize)."""

        def __init__(self, model: torch.nn.Module) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            tokens = self.model(input_ids=input_ids, attention_mask=attention_mask)
            hidden = tokens.last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1)

    pooled = MeanPooledNormalised(AutoModel.from_pretrained(str(model_dir())).eval())
    # The traced sample has padding, so the attention-mask path is the one traced; the probes
    # at batch size 4 (padded batches) check it.
    ids = torch.tensor([[101, 2198, 8292, 102, 0], [101, 2017, 2064, 1005, 102]])
    graph = folder / ONNX_NAME
    tmp = folder / f".{ONNX_NAME}.tmp"
    with torch.no_grad():
        torch.onnx.export(
            pooled,
            (ids, (ids != 0).to(torch.int64)),
            str(tmp),
            input_names=["input_ids", "attention_mask"],
            output_names=["embedding"],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "sequence"},
                "attention_mask": {0: "batch", 1: "sequence"},
                "embedding": {0: "batch"},
            },
            opset_version=OPSET,
            dynamo=False,
        )
    onnx.checker.check_model(str(tmp))
    tmp.replace(graph)
    shutil.copyfile(model_dir() / TOKENIZER_NAME, folder / TOKENIZER_NAME)

    manifest: dict[str, Any] = {
        "format": FORMAT,
        "model_id": MODEL_ID,
        "model_package": MODEL_PACKAGE,
        "package_version": importlib.metadata.version(MODEL_PACKAGE),
        "weights_sha256": weights_sha256(),
        "torch_version": importlib.metadata.version("torch"),
        "transformers_version": importlib.metadata.version("transformers"),
        "onnx_version": importlib.metadata.version("onnx"),
        "onnxruntime_version": importlib.metadata.version("onnxruntime"),
        "opset": OPSET,
        "onnx_sha256": sha256_file(graph),
        "onnx_bytes": graph.stat().st_size,
        "tokenizer_sha256": sha256_file(folder / TOKENIZER_NAME),
        "max_seq_length": seq,
        "dimension": int(expected.shape[1]),
        "pooling": "mean over attention_mask",
        "normalised": "l2",
        "inputs": ["input_ids", "attention_mask"],
        "output": "embedding",
        "probe": {},
    }
    probe = OnnxQueryEncoder(folder, max_seq_length=seq, manifest=manifest)
    alone = probe.encode(list(PROBE_SENTENCES), batch_size=1)  # a query, as the engine asks
    padded = probe.encode(list(PROBE_SENTENCES), batch_size=4)  # batches with padding
    got = np.concatenate([alone, padded])
    expected = np.concatenate([expected, expected])
    cosine = (got.astype(np.float64) * expected.astype(np.float64)).sum(axis=1)
    manifest["probe"] = {
        "sentences": len(PROBE_SENTENCES),
        "batch_sizes": [1, 4],
        "sentences_sha256": hashlib.sha256("\x1e".join(PROBE_SENTENCES).encode()).hexdigest(),
        "max_abs_difference": float(np.abs(got - expected).max()),
        "min_cosine": float(cosine.min()),
        "threshold": MIN_PROBE_COSINE,
    }
    if cosine.min() < MIN_PROBE_COSINE:
        worst = PROBE_SENTENCES[int(cosine.argmin()) % len(PROBE_SENTENCES)]
        raise IndexError_(
            f"{graph}: ONNX export disagrees with torch: cosine {cosine.min():.6f} < "
            f"{MIN_PROBE_COSINE} on probe {worst[:60]!r}"
        )
    write_json_atomic(folder / MANIFEST_NAME, manifest)
    return manifest
