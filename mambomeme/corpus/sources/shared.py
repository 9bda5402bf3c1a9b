"""The named benchmark corpora memes-10k and memes-full over ../shared/corpora.

Config: {"source": "shared", "selection": "memes-10k" | "memes-full", "root": <corpora dir>,
"benchmark": <dir with families.csv> (optional, default <root>/../benchmark),
"safety": {...} (optional)}. A relative root or benchmark is taken from the repository root.

Definition (../shared/benchmark/README.md), chained in this order:
1. all 100 imgflip575k templates;
2. imgflip575k memes: memes-10k keeps per memes/<Slug>.json.gz the 100 records with the most
   img-votes (commas stripped, missing = 0; ties by post id ascending, compared as strings
   since post ids are base-36); memes-full keeps every record;
3. every memegen template except the placeholders _error and _test;
4. all 559 MemeCap test memes.
memes-10k v1 is 9,668 items, memes-full 377,988 (tests/test_sources_shared.py counts them).
Records are yielded lazily, one source file in memory at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mambomeme.corpus.safety import classifier_from_config
from mambomeme.corpus.sources import imgflip, memecap, memegen
from mambomeme.corpus.sources.base import RawRecord
from mambomeme.corpus.templates import load_catalog
from mambomeme.errors import IngestError

REPO_ROOT = Path(__file__).resolve().parents[3]
SELECTIONS = {"memes-10k": 100, "memes-full": None}  # imgflip memes kept per template


def _paths(config: dict[str, Any]) -> tuple[Path, Path, int | None]:
    selection = config.get("selection")
    if selection not in SELECTIONS:
        raise IngestError(f"shared corpus: selection must be one of {sorted(SELECTIONS)}")
    root = REPO_ROOT / Path(config["root"])  # an absolute root replaces REPO_ROOT
    benchmark = REPO_ROOT / Path(config.get("benchmark") or root.parent / "benchmark")
    if not root.is_dir():
        raise IngestError(f"shared corpus: root {root} is not a folder")
    return root, benchmark, SELECTIONS[selection]


def read_records(config: dict[str, Any]) -> Iterator[RawRecord]:
    root, benchmark, top = _paths(config)
    classifier = classifier_from_config(config)
    flip = root / "imgflip575k"
    catalog = load_catalog(benchmark, flip / "templates")
    yield from imgflip.read_templates(flip, catalog, classifier)
    yield from imgflip.read_memes(flip, catalog, classifier, top)
    yield from memegen.read_templates(root / "memegen", catalog, classifier, memegen.PLACEHOLDERS)
    yield from memecap.read_memes(root / "memecap" / "memes-test.json", classifier)


def source_files(config: dict[str, Any]) -> list[Path]:
    root, benchmark, _ = _paths(config)
    return (
        imgflip.source_files({"path": root / "imgflip575k"})
        + memegen.source_files({"path": root / "memegen", "exclude": memegen.PLACEHOLDERS})
        + memecap.source_files({"path": root / "memecap" / "memes-test.json"})
        + [benchmark / "families.csv", benchmark / "template-equivalences.csv"]
    )
