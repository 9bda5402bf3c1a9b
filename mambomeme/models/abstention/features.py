"""The abstention model's features: what a ranked list says about itself (RequestEvidence)
as one vector (`features`, FEATURES in order). The engine computes them per request; training
(train.py) computes them for every dev query. ABSTENTION_VERSION names this feature set: a
model over other features is refused at load (model.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

ABSTENTION_VERSION = "abstain-lr-1"
IDENTITY_FIELDS = frozenset({"title", "aliases", "people", "template", "template_aliases"})
FEATURES = (
    "log_content_words",
    "top_coverage",
    "top_idf_coverage",
    "top_identity_field",
    "top_description_only",
    "top_bm25",
    "bm25_gap",
    "top_cosine",
    "cosine_gap",
    "route_agreement",
    "typo_used",
    "log_results",
)


@dataclass(frozen=True)
class RequestEvidence:
    """What the ranked list says about itself (the inputs of `features`)."""

    content_words: int
    top_coverage: float
    top_idf_coverage: float
    top_fields: frozenset[str]
    bm25: Sequence[float]  # the main cue's lexical scores, best first (FTS5: lower is better)
    cosines: Sequence[float]  # the main cue's dense scores, best first
    lexical_top: Sequence[int]  # rows of the main cue's top 10 per route
    dense_top: Sequence[int]
    typo_used: bool
    results: int


def features(ev: RequestEvidence) -> np.ndarray:
    bm25 = [-s for s in ev.bm25]  # higher is better from here on
    top_bm25 = bm25[0] if bm25 else 0.0
    bm25_gap = bm25[0] - bm25[1] if len(bm25) > 1 else top_bm25
    top_cos = ev.cosines[0] if ev.cosines else 0.0
    cos_gap = ev.cosines[0] - ev.cosines[1] if len(ev.cosines) > 1 else top_cos
    if ev.lexical_top and ev.dense_top:
        agreement = len(set(ev.lexical_top) & set(ev.dense_top)) / 10.0
    else:
        agreement = 0.0
    identity = bool(ev.top_fields & IDENTITY_FIELDS)
    return np.asarray(
        [
            math.log1p(ev.content_words),
            ev.top_coverage,
            ev.top_idf_coverage,
            float(identity),
            float(bool(ev.top_fields) and not identity),
            top_bm25,
            bm25_gap,
            top_cos,
            cos_gap,
            agreement,
            float(ev.typo_used),
            math.log1p(ev.results),
        ],
        dtype=np.float64,
    )
