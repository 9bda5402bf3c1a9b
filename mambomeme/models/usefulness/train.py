"""Training side of the per-item usefulness model (called by the tune stage; may use evaluation).

1. Pools: for every query of the dev benchmark's tune side and of earlier dev benchmarks
   (`usefulness.train_on`, each with its newest judgement set), the permissive fused list of
   `pool` candidates under the tuned config, described as features (search/engine.describe).
   Queries whose family is held out (`usefulness.held_out`, e.g. the dev benchmark's check
   side) are left out, so the check side stays unseen.
2. Labels: grade >= 2 from the judgements; a candidate nobody judged counts as not useful (the
   dev pools judge every system's top 10, so an unjudged candidate is one no system ranked high).
3. Models: HistGradientBoostingClassifier (`usefulness.gbt`) for P(useful), and LightGBM's
   LambdaMART ranker (`usefulness.ranker`, graded labels) as a learned fusion; folds grouped by
   query family (GroupKFold): every tune query gets P and a ranker score from the fold models
   that never saw its family.
4. Order and thresholds: what orders the list (the fused order, i.e. weighted RRF with exact
   tiers; P(useful); the ranker, each behind the exact tiers) and the (item, empty) pair on the
   `usefulness` grids that maximise the tuning
   objective (evaluation/objective.py: 0.55 Q + 0.15 E + 0.10 C + 0.10 S, minus 1 below the Hit@10
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

from mambomeme.config import GbtParams, RankerParams, UsefulnessTraining
from mambomeme.errors import TuningError
from mambomeme.evaluation.benchmark import Benchmark, Query
from mambomeme.evaluation.objective import search_objective
from mambomeme.models.usefulness.features import (
    FEATURE_VERSION,
    FEATURES,
    CandidateEvidence,
    matrix,
)
from mambomeme.models.usefulness.model import (
    MODEL_VERSION,
    ORDERS,
    UsefulnessModel,
    trees_sha256,
)
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


def new_model(gbt: GbtParams, seed: int) -> HistGradientBoostingClassifier:
    return HistGradientBoostingClassifier(
        max_iter=gbt.max_iter,
        learning_rate=gbt.learning_rate,
        max_leaf_nodes=gbt.max_leaf_nodes,
        min_samples_leaf=gbt.min_samples_leaf,
        l2_regularization=gbt.l2_regularization,
        early_stopping=False,
        random_state=seed,
    )


def new_ranker(ranker: RankerParams, seed: int) -> Any:
    """LightGBM's LambdaMART (objective lambdarank) over the same features, graded labels."""
    import lightgbm

    return lightgbm.LGBMRanker(
        objective="lambdarank",
        n_estimators=ranker.n_estimators,
        learning_rate=ranker.learning_rate,
        num_leaves=ranker.num_leaves,
        min_child_samples=ranker.min_child_samples,
        random_state=seed,
        deterministic=True,
        force_row_wise=True,
        n_jobs=1,
        verbose=-1,
    )


def fit_ranker(pools: Sequence[QueryPool], ranker: RankerParams, seed: int) -> Any:
    """The ranker over `pools` (one group per query; unjudged candidates grade 0)."""
    used = [p for p in pools if len(p.results)]
    x = np.vstack([p.x for p in used])
    grades = np.concatenate([np.clip(p.grades, 0, None) for p in used])
    return new_ranker(ranker, seed).fit(x, grades, group=[len(p.results) for p in used])


def out_of_fold(
    pools: Sequence[QueryPool],
    targets: Sequence[QueryPool],
    settings: UsefulnessTraining,
    seed: int,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """P(useful) and the ranker's score for each target query, from the fold models that never
    saw its family (GroupKFold over the training rows' query families)."""
    x, y, groups = training_rows(pools, frozenset())
    families = sorted(set(groups))
    folds = min(settings.folds, len(families))
    if folds < 2:
        raise TuningError(f"usefulness: {len(families)} query family(ies); need 2 for folds")
    probabilities: dict[str, np.ndarray] = {}
    scores: dict[str, np.ndarray] = {}
    for train, test in GroupKFold(n_splits=folds).split(x, y, groups):
        if len(set(y[train])) < 2:
            raise TuningError("usefulness: a training fold has a single class")
        held = set(groups[test])
        model = new_model(settings.gbt, seed).fit(x[train], y[train])
        ranker = fit_ranker([p for p in pools if p.query.family not in held], settings.ranker, seed)
        for p in targets:
            if p.query.family in held and len(p.results):
                probabilities[p.query.qid] = model.predict_proba(p.x)[:, 1]
                scores[p.query.qid] = np.asarray(ranker.predict(p.x), dtype=np.float64)
    return probabilities, scores


def ranker_trees(ranker: Any) -> list[dict[str, Any]]:
    """A fitted LGBMRanker's trees as node arrays (models/usefulness/model.py's format)."""
    dump = ranker.booster_.dump_model()
    if dump.get("average_output") or int(dump.get("num_tree_per_iteration", 1)) != 1:
        raise TuningError("usefulness: unexpected LightGBM model layout")
    trees = []
    for info in dump["tree_info"]:
        nodes: dict[str, list[Any]] = {k: [] for k in ("feature", "threshold", "left", "right",
                                                         "value", "leaf")}  # fmt: skip

        def add(node: Mapping[str, Any], nodes: dict[str, list[Any]] = nodes) -> int:
            at = len(nodes["leaf"])
            for key in nodes:
                nodes[key].append(0)
            if "leaf_value" in node:
                nodes["value"][at] = float(node["leaf_value"])
                nodes["leaf"][at] = True
                nodes["threshold"][at] = 0.0
                return at
            if node.get("decision_type") != "<=" or node.get("missing_type") not in (None, "None"):
                raise TuningError("usefulness: the ranker has a split other than x <= t")
            nodes["feature"][at] = int(node["split_feature"])
            nodes["threshold"][at] = float(node["threshold"])
            nodes["leaf"][at] = False
            nodes["value"][at] = 0.0
            nodes["left"][at] = add(node["left_child"])
            nodes["right"][at] = add(node["right_child"])
            return at

        add(info["tree_structure"])
        trees.append(nodes)
    return trees


def to_mapping(
    model: HistGradientBoostingClassifier,
    item_threshold: float,
    empty_threshold: float,
    pool: int,
    order: str = "useful",
    ranker: Any = None,
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
    extra: dict[str, Any] = {"order": order}
    if order == "ranker":
        found = ranker_trees(ranker)
        extra |= {"ranker_trees": found, "ranker_sha256": trees_sha256(found, 0.0)}
    return {
        **extra,
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
        scored = search_objective(benchmark, search, system, engine.items, floor, "usefulness")
        parts = {**scored.quality, "hit10": scored.hit10, "correct_empty": scored.correct_empty}
        return scored.value, parts

    return objective


def choose_thresholds(
    targets: Sequence[QueryPool],
    probabilities: Mapping[str, np.ndarray],
    scores: Mapping[str, Mapping[str, np.ndarray]],
    objective: Objective,
    settings: UsefulnessTraining,
) -> tuple[str, float, float, float, list[dict[str, Any]]]:
    """The best (order, item, empty) on the grids, ties to the earlier order in ORDERS and the
    smaller thresholds (longer lists); `scores`: order -> qid -> order score. Returns the order,
    both thresholds, the objective and the curve of every point."""
    by_cues = {(tuple(p.query.all_cues), Filters(**p.query.filter_dict)): p for p in targets}

    def searcher(
        order: str, item: float, empty: float
    ) -> Callable[[list[str], Filters], SearchResponse]:
        def search(cues: list[str], filters: Filters) -> SearchResponse:
            p = by_cues[(tuple(cues), filters)]
            prob = probabilities.get(p.query.qid, np.zeros(0))
            score = scores[order].get(p.query.qid, np.zeros(0))
            shown, reason = useful_list(
                p.results, p.evidence, prob, item, empty, 10, order_score=score
            )
            return SearchResponse("tune", "usefulness", tuple(cues), tuple(shown), {}, reason)

        return search

    curve = []
    best: tuple[float, str, float, float] | None = None
    allowed = ORDERS if settings.orders is None else settings.orders
    for order in [o for o in ORDERS if o in allowed]:
        for item in sorted(settings.item_thresholds):
            for empty in sorted(settings.empty_thresholds):
                value, parts = objective(searcher(order, item, empty))
                curve.append({"order": order, "item_threshold": item, "empty_threshold": empty,
                              "objective": value, **parts})  # fmt: skip
                if best is None or value > best[0] + 1e-12:
                    best = (value, order, item, empty)
    if best is None:
        raise TuningError("usefulness: empty order or threshold grids")
    return best[1], best[2], best[3], best[0], curve


def train_usefulness(
    tune_pools: Sequence[QueryPool],
    extra_pools: Sequence[QueryPool],
    held_out: frozenset[str],
    objective: Objective,
    settings: UsefulnessTraining,
    seed: int,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The model mapping (with its thresholds) and a report of how it was chosen."""
    tune_pools = [p for p in tune_pools if p.query.family not in held_out]
    pools = [p for p in [*tune_pools, *extra_pools] if p.query.family not in held_out]
    x, y, groups = training_rows(pools, held_out)
    probabilities, ranked = out_of_fold(pools, tune_pools, settings, seed)
    fused = {p.query.qid: -np.arange(len(p.results), dtype=np.float64) for p in tune_pools}
    scores = {"fused": fused, "useful": probabilities, "ranker": ranked}
    order, item, empty, value, curve = choose_thresholds(
        tune_pools, probabilities, scores, objective, settings
    )
    final = new_model(settings.gbt, seed).fit(x, y)
    ranker = fit_ranker(pools, settings.ranker, seed) if order == "ranker" else None
    mapping = to_mapping(final, item, empty, settings.pool, order, ranker)
    loaded = UsefulnessModel.from_mapping(mapping)
    check = loaded.probability(x[:200])
    drift = float(np.max(np.abs(check - final.predict_proba(x[:200])[:, 1])))
    if ranker is not None:
        scored = loaded.order_scores(x[:200], check)
        drift = max(drift, float(np.max(np.abs(scored - ranker.predict(x[:200])))))
    if not math.isfinite(drift) or drift > 1e-6:
        raise TuningError(f"usefulness: the JSON trees disagree with the fitted models by {drift}")
    best_by_order = {
        o: max((c["objective"] for c in curve if c["order"] == o), default=None) for o in ORDERS
    }
    report = {
        "rows": int(len(y)),
        "positives": int(y.sum()),
        "families": len(set(groups)),
        "queries": {"tune": len(tune_pools), "train_on": len(extra_pools)},
        "objective_out_of_fold": value,
        "objective_by_order": best_by_order,
        "chosen": {"order": order, "item_threshold": item, "empty_threshold": empty},
        "curve": curve,
    }
    return mapping, report
