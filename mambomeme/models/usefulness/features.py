"""What the per-item usefulness model reads about one candidate of one request.

The engine fills one `CandidateEvidence` per candidate of its permissive fused list (every
route of the system searched, no evidence threshold) and one `RequestSignals` per request;
`vector` turns them into the model's input. Plain records, so this floor never imports search.

Features (FEATURES, in order), each route read whether or not fusion weighs it (the semantic
evidence is always on):
  fused position (log), and for the lexical, typo and dense routes the best 1/rank over the
  request's cues (0 when the route did not find it) and the raw score (BM25 as a positive number,
  cosine; the list's last score when the route did not find it);
  the candidate's cosine and BM25 against the request's best (difference and ratio);
  the share of the main cue's content words the item holds (plain and IDF-weighted) and the best
  share over all cues; whether an identity field (title, aliases, people, template) matched or
  only descriptions did; the exact tier (0 names its template, 1 quotes its caption, 2 other
  exact, 3 none); the share of cues that found it; the item is a template;
  the request: content words (log), cues (log), the best cosine, the best BM25, the lexical/dense
  top-10 agreement, whether typo corrections were made.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

FEATURE_VERSION = "usefulness-features-1"
ROUTE_NAMES = ("lexical", "typo", "dense")
FEATURES = (
    "log_fused_position",
    "lexical_rrank",
    "typo_rrank",
    "dense_rrank",
    "lexical_bm25",
    "typo_bm25",
    "dense_cosine",
    "cosine_below_best",
    "bm25_share_of_best",
    "coverage",
    "idf_coverage",
    "best_cue_coverage",
    "identity_field",
    "description_only",
    "exact_tier",
    "cue_share",
    "is_template",
    "q_log_content_words",
    "q_log_cues",
    "q_top_cosine",
    "q_top_bm25",
    "q_route_agreement",
    "q_typo_used",
)


@dataclass(frozen=True)
class RequestSignals:
    """What one request's route lists say as a whole (main cue)."""

    content_words: int
    cues: int
    top_cosine: float  # best dense cosine (0 without a dense list)
    last_cosine: float  # the dense list's last cosine: the value of 'not found by dense'
    top_bm25: float  # best lexical BM25, as a positive number (0 without a lexical list)
    route_agreement: float  # share of the lexical top 10 also in the dense top 10
    typo_used: bool


@dataclass(frozen=True)
class CandidateEvidence:
    """One candidate: where each route put it and how its text covers the cues."""

    position: int  # 1-based, in the permissive fused order
    ranks: dict[str, int]  # route -> best rank over the cues (absent: not found)
    scores: dict[str, float]  # route -> best raw score (BM25 positive, cosine)
    coverage: float
    idf_coverage: float
    best_cue_coverage: float
    identity_field: bool
    description_only: bool
    exact_tier: int  # 0..2 exact, 3 none
    cues_found: int
    is_template: bool


def vector(c: CandidateEvidence, r: RequestSignals) -> list[float]:
    rrank = [1.0 / c.ranks[name] if name in c.ranks else 0.0 for name in ROUTE_NAMES]
    lexical = c.scores.get("lexical", 0.0)
    typo = c.scores.get("typo", 0.0)
    cosine = c.scores.get("dense", r.last_cosine)
    best_bm25 = max(lexical, typo)
    return [
        math.log(c.position),
        *rrank,
        lexical,
        typo,
        cosine,
        r.top_cosine - cosine,
        best_bm25 / r.top_bm25 if r.top_bm25 > 0 else 0.0,
        c.coverage,
        c.idf_coverage,
        c.best_cue_coverage,
        float(c.identity_field),
        float(c.description_only),
        float(c.exact_tier),
        c.cues_found / max(r.cues, 1),
        float(c.is_template),
        math.log1p(r.content_words),
        math.log(max(r.cues, 1)),
        r.top_cosine,
        r.top_bm25,
        r.route_agreement,
        float(r.typo_used),
    ]


def matrix(candidates: Sequence[CandidateEvidence], request: RequestSignals) -> np.ndarray:
    """One row per candidate, columns in FEATURES order."""
    if not candidates:
        return np.zeros((0, len(FEATURES)), dtype=np.float64)
    return np.asarray([vector(c, request) for c in candidates], dtype=np.float64)
