"""Dense documents: ablations leave fields out of every document, `memes_without` only out of
meme documents (memes-full's compact documents), and the manifest says which."""

from __future__ import annotations

import json
from pathlib import Path

from mambomeme.corpus.ingest import load_items
from mambomeme.index.dense import DenseFiles, Encoder, build_dense, document

KNOWLEDGE = frozenset({"template_aliases", "template_visual", "template_meaning"})


def test_memes_without_keeps_template_knowledge(fixture_build: Path, tmp_path: Path) -> None:
    items = load_items(fixture_build)
    template = next(i for i in items if i.kind == "template" and i.field_text("template_meaning"))
    meme = next(i for i in items if i.kind != "template" and i.field_text("template_meaning"))
    picked = [template, meme]

    encoder = Encoder("cpu", 128)
    files = DenseFiles.in_dir(tmp_path, "compact")
    manifest = build_dense(picked, files, encoder, 8, "sha", frozenset(), KNOWLEDGE)

    assert manifest["memes_without_fields"] == sorted(KNOWLEDGE)
    assert manifest["without_fields"] == []
    assert manifest["max_seq_length"] == 128
    full = [document(template), document(meme, KNOWLEDGE)]
    import hashlib

    assert (
        manifest["documents_sha256"]
        == hashlib.sha256("\x1e".join(full).encode("utf-8")).hexdigest()
    )
    assert "template means:" in full[0]
    assert "template means:" not in full[1]
    assert json.loads(files.ids.read_text()) == [template.id, meme.id]


def test_unchanged_documents_reuse_the_matrix(fixture_build: Path, tmp_path: Path) -> None:
    items = load_items(fixture_build)[:6]
    encoder = Encoder("cpu", 128)
    files = DenseFiles.in_dir(tmp_path)
    first = build_dense(items, files, encoder, 8, "corpus-1")
    second = build_dense(items, files, encoder, 8, "corpus-2")  # say, only safety changed
    assert (first["reused"], second["reused"]) == (False, True)
    assert second["matrix_sha256"] == first["matrix_sha256"]
    assert second["corpus_manifest_sha256"] == "corpus-2"

    fewer = build_dense(items, files, encoder, 8, "corpus-3", frozenset({"ocr_text"}))
    assert fewer["reused"] is False  # other documents: embedded again
    files.matrix.write_bytes(files.matrix.read_bytes()[:-4] + b"\0\0\0\0")  # a damaged matrix
    again = build_dense(items, files, encoder, 8, "corpus-3", frozenset({"ocr_text"}))
    assert again["reused"] is False
