"""Train the abstention model (models/abstention/model.py) on dev judgements for a chosen config.

Each dev query is ranked once under the config; its label is "the shown list holds an item of
grade >= 2". A logistic regression over the request features is fitted with folds grouped by
query family; its out-of-fold probabilities choose the threshold that maximises the seed's C
(harmonic mean of Hit@10 over answerable queries and CorrectEmpty over no-match queries) while
Hit@10 stays >= `min_hit10`; the final model is then fitted on every query. Deterministic for
a seed. Returns the model mapping (carried by selection.json) and the threshold curve.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mambomeme.evaluation.benchmark import Benchmark
from mambomeme.models.abstention.features import ABSTENTION_VERSION, FEATURES, features
from mambomeme.search.engine import Candidates, Engine, EngineConfig
from mambomeme.search.results import Result

GOOD = 2


@dataclass(frozen=True)
class Example:
    qid: str
    family: str
    answerable: bool
    shown: bool  # the evidence rule left a non-empty list (abstention only acts on those)
    good: bool  # the shown list holds an item of grade >= 2
    x: np.ndarray


def examples(
    engine: Engine,
    benchmark: Benchmark,
    candidates: Callable[[Sequence[str], Mapping[str, str]], Candidates | None],
    config: EngineConfig,
) -> list[Example]:
    out = []
    for q in benchmark.queries:
        found = candidates(q.all_cues, q.filter_dict)
        if found is not None:  # as served: only the routes the config gives a weight
            lists = tuple(lst for lst in found.lists if config.route_weights[lst.route] > 0)
            found = dataclasses.replace(found, lists=lists)
        results: list[Result] = engine.rank(found, 10, config) if found is not None else []
        grades = benchmark.qrels.get(q.qid, {})
        good = any(grades.get(r.item_id, 0) >= GOOD for r in results)
        x = (
            features(engine.request_evidence(found, results))
            if found is not None and results
            else np.zeros(len(FEATURES))
        )
        out.append(Example(q.qid, q.family, q.answerable, bool(results), good, x))
    return out


def outcome(exs: Sequence[Example], keep: np.ndarray) -> tuple[float, float, float]:
    """(Hit@10, CorrectEmpty, C) when the lists with keep[i] False are withheld."""
    answerable = [i for i, e in enumerate(exs) if e.answerable]
    nomatch = [i for i, e in enumerate(exs) if not e.answerable]
    hit = sum(exs[i].good and keep[i] for i in answerable) / max(len(answerable), 1)
    empty = sum(not (exs[i].shown and keep[i]) for i in nomatch) / max(len(nomatch), 1)
    c = 2 * hit * empty / (hit + empty) if hit + empty else 0.0
    return hit, empty, c


def _fit(x: np.ndarray, y: np.ndarray, seed: int, c: float) -> tuple[Any, np.ndarray, np.ndarray]:
    from sklearn.linear_model import LogisticRegression

    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(C=c, class_weight="balanced", max_iter=5000, random_state=seed)
    return model.fit((x - mean) / scale, y), mean, scale


def train_abstention(
    exs: Sequence[Example], seed: int, folds: int, min_hit10: float, c: float = 1.0
) -> tuple[dict[str, Any], dict[str, Any]]:
    from sklearn.model_selection import GroupKFold

    shown = [i for i, e in enumerate(exs) if e.shown]
    x = np.vstack([exs[i].x for i in shown])
    y = np.asarray([int(exs[i].good) for i in shown])
    if len(set(y)) < 2:  # nothing to learn: a model that never abstains, and says why
        n = len(FEATURES)
        mapping = {
            "version": ABSTENTION_VERSION,
            "features": list(FEATURES),
            "mean": [0.0] * n,
            "scale": [1.0] * n,
            "weights": [0.0] * n,
            "intercept": 0.0,
            "threshold": 0.0,
        }
        hit, empty, cc = outcome(exs, np.ones(len(exs), dtype=bool))
        point = {"threshold": 0.0, "hit10": round(hit, 4), "correct_empty": round(empty, 4),
                 "C": round(cc, 4)}  # fmt: skip
        reason = "every shown list is good" if y.all() else "no shown list is good"
        return mapping, {"queries": len(exs), "shown": len(shown), "untrained": reason,
                         "without": point, "chosen": point, "withheld": [],
                         "curve": [point]}  # fmt: skip
    families = [exs[i].family for i in shown]
    n_folds = min(folds, len(set(families)))
    oof = np.zeros(len(shown))
    for fit_idx, held in GroupKFold(n_splits=n_folds).split(x, y, families):
        if len(set(y[fit_idx])) < 2:
            oof[held] = 1.0
            continue
        model, mean, scale = _fit(x[fit_idx], y[fit_idx], seed, c)
        oof[held] = model.predict_proba((x[held] - mean) / scale)[:, 1]
    p_all = np.ones(len(exs))
    p_all[shown] = oof
    curve = []
    for t in [0.0, *sorted({round(float(p), 6) for p in oof})]:
        hit, empty, cc = outcome(exs, p_all >= t)
        curve.append({"threshold": t, "hit10": round(hit, 4), "correct_empty": round(empty, 4),
                      "C": round(cc, 4)})  # fmt: skip
    allowed = [pt for pt in curve if pt["hit10"] >= min_hit10] or curve[:1]
    best = max(allowed, key=lambda pt: (pt["C"], -pt["threshold"]))
    withheld = sorted(exs[i].qid for i in range(len(exs)) if not p_all[i] >= best["threshold"])
    final, mean, scale = _fit(x, y, seed, c)
    mapping = {
        "version": ABSTENTION_VERSION,
        "features": list(FEATURES),
        "mean": [float(v) for v in mean],
        "scale": [float(v) for v in scale],
        "weights": [float(v) for v in final.coef_[0]],
        "intercept": float(final.intercept_[0]),
        "threshold": float(best["threshold"]),
    }
    report = {
        "queries": len(exs),
        "shown": len(shown),
        "good_shown": int(y.sum()),
        "no_match": sum(not e.answerable for e in exs),
        "folds": n_folds,
        "min_hit10": min_hit10,
        "without": curve[0],
        "chosen": best,
        "withheld": withheld,  # queries the chosen threshold empties (out-of-fold)
        "curve": curve,
    }
    return mapping, report
