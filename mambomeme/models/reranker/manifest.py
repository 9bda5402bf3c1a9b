"""The reranker's artifact format: its folder's file names and manifest.json, read and checked.

Nothing here loads the model (no onnxruntime, no tokenizers): index/integrity.py checks a
build's reranker files against this manifest, and model.py serves the model it describes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mambomeme.errors import ArtifactIntegrityError

RERANKER_DIR = "reranker"
ONNX_NAME = "model.onnx"
TOKENIZER_NAME = "tokenizer.json"
MANIFEST_NAME = "manifest.json"
FORMAT = "reranker-onnx-1"
MANIFEST_FIELDS = (
    "format",
    "base_model_id",
    "base_weights_sha256",
    "text_version",
    "data",
    "hyper_parameters",
    "validation",
    "training",
    "probe",
    "files",
)


def read_manifest(folder: Path) -> dict[str, Any]:
    """folder/manifest.json, refused (naming it) when unreadable, incomplete or of another
    format."""
    path = Path(folder) / MANIFEST_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ArtifactIntegrityError(str(path), f"unreadable reranker manifest: {exc}") from None
    if not isinstance(data, dict):
        raise ArtifactIntegrityError(str(path), "not a JSON object")
    missing = [name for name in MANIFEST_FIELDS if name not in data]
    if missing:
        raise ArtifactIntegrityError(str(path), f"fields missing: {', '.join(missing)}")
    if data["format"] != FORMAT:
        raise ArtifactIntegrityError(str(path), f"format {data['format']!r}, expected {FORMAT!r}")
    return data
