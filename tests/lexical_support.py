"""Shared by the lexical-route tests: the cues they compare with FTS5, and hits as pairs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mambomeme.index import fts_query

ROOT = Path(__file__).resolve().parents[1]

# ours (fixture corpus): names, a quote, stop words only, noisy spelling, case, an absent word
EXTRA_CUES = [
    "john cena",
    "you can't see me",
    "the",
    "a of the",
    "jon sena john cena cena",
    "JOHN Cena",
    "xyzzy john",
]


def fixture_cues() -> list[list[str]]:
    """Token lists of EXTRA_CUES and of every fixture benchmark query (non-empty ones)."""
    texts = list(EXTRA_CUES)
    for line in (ROOT / "benchmarks" / "fixture" / "queries.jsonl").read_text().splitlines():
        if line.strip():
            texts.append(str(json.loads(line)["text"]))
    return [t for t in (fts_query.tokenize(x) for x in texts) if t]


def pairs(hits: list[Any]) -> list[tuple[int, float]]:
    return [(h.row, h.score) for h in hits]


def build_fixture_lexical(build: Path, weights: Any) -> Path:
    """Ingest the fixture corpus into `build` and build its lexical index (no model needed);
    returns the corpus manifest (build/corpus-fixture.json)."""
    from mambomeme.corpus.ingest import ingest
    from mambomeme.index.build import build_lexical_index

    manifest = build / "corpus-fixture.json"
    ingest(
        "fixture",
        {"source": "fixture", "path": str(ROOT / "fixture")},
        build,
        manifest,
        strict=True,
        knowledge_dir=ROOT / "knowledge",
    )
    build_lexical_index(build, manifest, weights)
    return manifest
