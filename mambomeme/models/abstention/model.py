"""Abstention as a calibrated decision: is there any good match (grade >= 2) in this list?

For each request the engine already knows how well its best results match: the share of the
cue's content words the top result holds (plain and IDF-weighted), whether it matched an
identity field (title, names, template) or only descriptions, the top BM25 score and its gap
to the next, the top cosine and its gap, how much the lexical and dense routes agree, and
whether typo corrections were needed. A logistic regression over those features (trained on
dev judgements with folds grouped by query family, models/abstention/train.py) gives
P(good match); below the frozen threshold the engine answers with an honest empty list.

The model travels as a plain mapping (`{"features", "mean", "scale", "weights", "intercept",
"threshold", "version"}`) inside the frozen selection, so applying it needs NumPy only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from mambomeme.errors import MamboMemeError
from mambomeme.models.abstention.features import ABSTENTION_VERSION, FEATURES


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
