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
