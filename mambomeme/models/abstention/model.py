"""Abstention as a calibrated decision: is there any good match (grade >= 2) in this list?

For each request the engine already knows how well its best results match: the share of the
cue's content words the top result holds (plain and IDF-weighted), whether it matched an
identity field (title, names, template) or only descriptions, the top BM25 score and its gap
to the next, the top cosine and its gap, how much the lexical and dense routes agree, and
whether typo corrections were needed. A logistic regression over those features (trained on
dev judgements with folds grouped by query family, evaluation/abstain_training.py) gives
P(good match); below the frozen threshold the engine answers with an honest empty list.

The model travels as a plain mapping (`{"features", "mean", "scale", "weights", "intercept",
"threshold", "version"}`) inside the frozen selection, so applying it needs NumPy only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mambomeme.errors import MamboMemeError

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


@dataclass(frozen=True)
class AbstentionModel:
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    intercept: float
    threshold: float

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> AbstentionModel:
        if raw.get("version") != ABSTENTION_VERSION or tuple(raw.get("features", ())) != FEATURES:
            raise MamboMemeError(
                f"abstention model {raw.get('version')!r} over other features; this engine "
                f"computes {ABSTENTION_VERSION} {FEATURES}: re-run the tune stage"
            )
        arrays = [np.asarray(raw[k], dtype=np.float64) for k in ("mean", "scale", "weights")]
        if any(a.shape != (len(FEATURES),) for a in arrays):
            raise MamboMemeError("abstention model: mean, scale and weights need one per feature")
        mean, scale, weights = arrays
        return cls(mean, scale, weights, float(raw["intercept"]), float(raw["threshold"]))

    def to_mapping(self) -> dict[str, Any]:
        return {
            "version": ABSTENTION_VERSION,
            "features": list(FEATURES),
            "mean": [float(x) for x in self.mean],
            "scale": [float(x) for x in self.scale],
            "weights": [float(x) for x in self.weights],
            "intercept": self.intercept,
            "threshold": self.threshold,
        }

    def probability(self, x: np.ndarray) -> float:
        z = float(((x - self.mean) / self.scale) @ self.weights + self.intercept)
        return 1.0 / (1.0 + math.exp(-z))
