"""Training side of the per-item usefulness model (called by the tune stage; may use evaluation).

1. Pools: for every query of the dev benchmark's tune side and of earlier dev benchmarks
   (`usefulness.train_on`, each with its newest judgement set), the permissive fused list of
   `pool` candidates under the tuned config, described as features (search/engine.describe).
   Queries whose family is held out (`usefulness.held_out`, e.g. the dev benchmark's check
   side) are left out, so the check side stays unseen.
2. Labels: grade >= 2 from the judgements; a candidate nobody judged counts as not useful (the
   dev pools judge every system's top 10, so an unjudged candidate is one no system ranked high).
3. Model: HistGradientBoostingClassifier (`usefulness.gbt`), folds grouped by query family
   (GroupKFold): every tune query gets P from the fold model that never saw its family.
4. Thresholds: the (item, empty) pair on the `usefulness` grids that maximises the tuning
   objective (stages/tune.py: 0.55 Q + 0.15 E + 0.10 C + 0.10 S, minus 1 below the Hit@10
   floor) over the out-of-fold probabilities; the final model is fitted on every training row.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import GroupKFold

from mambomeme.errors import TuningError
from mambomeme.evaluation.benchmark import Benchmark, Query
from mambomeme.evaluation.runner import run_benchmark
from mambomeme.evaluation.score import WEIGHTS, OutcomeTable, aggregate, evaluate_run
from mambomeme.models.usefulness.features import (
    FEATURE_VERSION,
    FEATURES,
    CandidateEvidence,
    matrix,
)
from mambomeme.models.usefulness.model import MODEL_VERSION, UsefulnessModel, trees_sha256
from mambomeme.search.engine import Engine, EngineConfig
from mambomeme.search.results import Filters, Result, SearchResponse
from mambomeme.search.usefulness import useful_list


@dataclass(frozen=True)
class QueryPool:
    """One query's permissive candidates, their features and grades (-1: not judged)."""

    benchmark: str
    query: Query
    results: tuple[Result, ...]
    evidence: tuple[CandidateEvidence, ...]
    x: np.ndarray
    grades: np.ndarray


def collect(
    engine: Engine, benchmark: Benchmark, name: str, system: str, config: EngineConfig, pool: int
) -> list[QueryPool]:
    """Every query's permissive pool under `config` (its weights, k and depth)."""
    found = []
    for query in benchmark.queries:
        candidates = engine.retrieve(
            query.all_cues, Filters(**query.filter_dict), system, max(config.depth, pool)
        )
        if candidates is None:
            results: list[Result] = []
            evidence: list[CandidateEvidence] = []
            x = np.zeros((0, len(FEATURES)), dtype=np.float64)
        else:
            results = engine.permissive_pool(candidates, pool, config)
            evidence, request = engine.describe(candidates, results)
            x = matrix(evidence, request)
        qrels = benchmark.qrels.get(query.qid, {})
        grades = np.asarray([qrels.get(r.item_id, -1) for r in results], dtype=np.int64)
        found.append(QueryPool(name, query, tuple(results), tuple(evidence), x, grades))
    return found


def training_rows(
    pools: Sequence[QueryPool], held_out: frozenset[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """X, y (grade >= 2; unjudged = 0) and the query family of every row."""
    xs, ys, groups = [], [], []
    for p in pools:
        if p.query.family in held_out or not len(p.results):
            continue
        xs.append(p.x)
        ys.append((p.grades >= 2).astype(np.int64))
        groups.extend([p.query.family] * len(p.results))
    if not xs:
        raise TuningError("usefulness: no training rows (every query held out or empty)")
    return np.vstack(xs), np.concatenate(ys), np.asarray(groups)


def new_model(settings: Mapping[str, Any], seed: int) -> HistGradientBoostingClassifier:
    gbt = settings["gbt"]
    return HistGradientBoostingClassifier(
        max_iter=int(gbt["max_iter"]),
        learning_rate=float(gbt["learning_rate"]),
        max_leaf_nodes=int(gbt["max_leaf_nodes"]),
        min_samples_leaf=int(gbt["min_samples_leaf"]),
        l2_regularization=float(gbt["l2_regularization"]),
        early_stopping=False,
        random_state=seed,
    )


def out_of_fold(
    x: np.ndarray,
    y: np.ndarray,
    groups: np.ndarray,
    targets: Sequence[QueryPool],
    settings: Mapping[str, Any],
    seed: int,
) -> dict[str, np.ndarray]:
    """P for each target query from the fold model that never saw its family."""
    families = sorted(set(groups))
    folds = min(int(settings["folds"]), len(families))
    if folds < 2:
        raise TuningError(f"usefulness: {len(families)} query family(ies); need 2 for folds")
    probabilities: dict[str, np.ndarray] = {}
    for train, test in GroupKFold(n_splits=folds).split(x, y, groups):
        if len(set(y[train])) < 2:
            raise TuningError("usefulness: a training fold has a single class")
        model = new_model(settings, seed).fit(x[train], y[train])
        held = set(groups[test])
        for p in targets:
            if p.query.family in held and len(p.results):
                probabilities[p.query.qid] = model.predict_proba(p.x)[:, 1]
    return probabilities


def to_mapping(
    model: HistGradientBoostingClassifier, item_threshold: float, empty_threshold: float, pool: int
) -> dict[str, Any]:
    """The fitted ensemble as the JSON the selection carries (models/usefulness/model.py)."""
    if model.n_trees_per_iteration_ != 1:
        raise TuningError("usefulness: expected a binary classifier")
    trees = []
    for (predictor,) in model._predictors:
        nodes = predictor.nodes
        if bool(nodes["is_categorical"].any()):
            raise TuningError("usefulness: categorical splits are not supported")
        trees.append(
            {
                "feature": [int(v) for v in nodes["feature_idx"]],
                "threshold": [float(v) for v in nodes["num_threshold"]],
                "left": [int(v) for v in nodes["left"]],
                "right": [int(v) for v in nodes["right"]],
                "value": [float(v) for v in nodes["value"]],
                "leaf": [bool(v) for v in nodes["is_leaf"]],
            }
        )
    baseline = float(np.asarray(model._baseline_prediction).ravel()[0])
    return {
        "version": MODEL_VERSION,
        "feature_version": FEATURE_VERSION,
        "features": list(FEATURES),
        "baseline": baseline,
        "trees": trees,
        "sha256": trees_sha256(trees, baseline),
        "item_threshold": item_threshold,
        "empty_threshold": empty_threshold,
        "pool": pool,
    }


Objective = Callable[[Callable[[list[str], Filters], SearchResponse]], tuple[float, dict[str, Any]]]


def objective_for(benchmark: Benchmark, engine: Engine, system: str, floor: float) -> Objective:
    """The tuning objective of a search function over `benchmark` (module docstring, 4)."""

    def objective(
        search: Callable[[list[str], Filters], SearchResponse],
    ) -> tuple[float, dict[str, Any]]:
        run = run_benchmark(benchmark, search, system, items=engine.items)
        parts = aggregate(OutcomeTable.of(evaluate_run(benchmark, run)))
        if parts.Q is None:
            raise TuningError("usefulness: no answerable query in any primary slice")
        quality = {"Q": parts.Q, "E": parts.E or 0.0, "C": parts.C, "S": parts.S or 0.0}
        value = sum(WEIGHTS[name] * v for name, v in quality.items())
        hit10 = parts.hit10 or 0.0
        if hit10 < floor:
            value -= 1.0
        return value, {**quality, "hit10": hit10, "correct_empty": parts.correct_empty}

    return objective


def choose_thresholds(
    targets: Sequence[QueryPool],
    probabilities: Mapping[str, np.ndarray],
    objective: Objective,
    settings: Mapping[str, Any],
) -> tuple[float, float, float, list[dict[str, Any]]]:
    """The best (item, empty) threshold pair on the grids (ties: the smaller pair, i.e. the
    longer lists), with the curve of every point."""
    by_cues = {(tuple(p.query.all_cues), Filters(**p.query.filter_dict)): p for p in targets}
    curve = []
    best: tuple[float, float, float] | None = None

    def searcher(item: float, empty: float) -> Callable[[list[str], Filters], SearchResponse]:
        def search(cues: list[str], filters: Filters) -> SearchResponse:
            p = by_cues[(tuple(cues), filters)]
            prob = probabilities.get(p.query.qid, np.zeros(0))
            shown, reason = useful_list(p.results, p.evidence, prob, item, empty, 10)
            return SearchResponse("tune", "usefulness", tuple(cues), tuple(shown), {}, reason)

        return search

    for item in sorted(float(v) for v in settings["item_thresholds"]):
        for empty in sorted(float(v) for v in settings["empty_thresholds"]):
            value, parts = objective(searcher(item, empty))
            curve.append({"item_threshold": item, "empty_threshold": empty,
                          "objective": value, **parts})  # fmt: skip
            if best is None or value > best[0] + 1e-12:
                best = (value, item, empty)
    if best is None:
        raise TuningError("usefulness: empty threshold grids")
    return best[1], best[2], best[0], curve


def train_usefulness(
    tune_pools: Sequence[QueryPool],
    extra_pools: Sequence[QueryPool],
    held_out: frozenset[str],
    objective: Objective,
    settings: Mapping[str, Any],
    seed: int,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The model mapping (with its thresholds) and a report of how it was chosen."""
    tune_pools = [p for p in tune_pools if p.query.family not in held_out]
    x, y, groups = training_rows([*tune_pools, *extra_pools], held_out)
    probabilities = out_of_fold(x, y, groups, tune_pools, settings, seed)
    item, empty, value, curve = choose_thresholds(tune_pools, probabilities, objective, settings)
    final = new_model(settings, seed).fit(x, y)
    mapping = to_mapping(final, item, empty, int(settings["pool"]))
    check = UsefulnessModel.from_mapping(mapping).probability(x[:200])
    drift = float(np.max(np.abs(check - final.predict_proba(x[:200])[:, 1])))
    if not math.isfinite(drift) or drift > 1e-9:
        raise TuningError(f"usefulness: the JSON trees disagree with scikit-learn by {drift}")
    report = {
        "rows": int(len(y)),
        "positives": int(y.sum()),
        "families": len(set(groups)),
        "queries": {"tune": len(tune_pools), "train_on": len(extra_pools)},
        "objective_out_of_fold": value,
        "chosen": {"item_threshold": item, "empty_threshold": empty},
        "curve": curve,
    }
    return mapping, report
