"""Shared fixtures: the real fixture corpus built once per session into a temp build dir,
with the real SQLite and the real model (no mocks)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# remembered content checks (index/verified.py) go to a private folder, not ~/.cache
os.environ.setdefault("MAMBOMEME_VERIFIED_DIR", tempfile.mkdtemp(prefix="mambomeme-verified-"))
# no warm search servers (mambomeme/warm) left running by CLI tests; tests/test_warm.py opts in
os.environ["MAMBOMEME_WARM"] = "0"

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def params() -> dict[str, Any]:
    from mambomeme.config import load_params

    return load_params(ROOT / "params.yaml")


@pytest.fixture(scope="session")
def fixture_build(tmp_path_factory: pytest.TempPathFactory, params: dict[str, Any]) -> Path:
    """build/ for the fixture corpus: items, previews, lexical index and its term lists, full
    dense index, the ONNX query encoder."""
    from lexical_support import build_fixture_lexical

    from mambomeme.index.build import build_dense_indexes
    from mambomeme.index.query_encoder import QUERY_ENCODER_DIR, export_query_encoder
    from mambomeme.index.term_lists import TERM_LISTS_DIR, build_term_lists

    build = tmp_path_factory.mktemp("fixture-build")
    manifest = build_fixture_lexical(build, params["lexical"]["weights"])
    build_term_lists(build / "lexical.sqlite", build / TERM_LISTS_DIR, progress=False)
    build_dense_indexes(build, manifest, 64, "cpu", {"ocr_text": ["ocr_text"]})
    export_query_encoder(build / QUERY_ENCODER_DIR)  # params dense.query_encoder: onnx
    return build


@pytest.fixture(scope="session")
def engine(fixture_build: Path, params: dict[str, Any]) -> Any:
    from mambomeme.search.engine import Engine

    eng = Engine.open(fixture_build, params)
    eng.load("hybrid")
    return eng


@pytest.fixture(scope="session")
def lexical_engine(fixture_build: Path, params: dict[str, Any]) -> Any:
    """An engine on which only lexical systems are used (the model is never loaded)."""
    from mambomeme.search.engine import Engine

    return Engine.open(fixture_build, params)
