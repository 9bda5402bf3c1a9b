"""Train the safety model from a frozen label version and report it on the held-out test split.

`train_from_labels` joins the labels to the items they name, builds the features, fits on the
train split, chooses C and the threshold on validation (`train`) and reports test recall,
precision and masked fraction with bootstrap intervals, overall and per policy category.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mambomeme.corpus.manifest import sha256_file
from mambomeme.corpus.safety import SafetyClassifier
from mambomeme.corpus.schema import Item
from mambomeme.models.safety import signals
from mambomeme.models.safety.features import (
    FEATURE_VERSION,
    Embed,
    Priors,
    feature_matrix,
    rule_features,
    safety_document,
)
from mambomeme.models.safety.model import SafetyModel, SafetyModelError
from mambomeme.moderation.labels import CATEGORY_NAMES, LabelRow, read_labels_tsv


def read_corpus_items(config: Mapping[str, Any]) -> dict[str, Item]:
    """Every valid item of a corpus source, by id (the labels name items of this corpus)."""
    from mambomeme.corpus.ingest import source_module, validate_all

    items, _, _ = validate_all(source_module(dict(config)).read_records(dict(config)))
    return {it.id: it for it in items}


def _platt(scores: np.ndarray, y: np.ndarray, seed: int) -> tuple[float, float]:
    from sklearn.linear_model import LogisticRegression

    fit = LogisticRegression(C=1e6, random_state=seed, max_iter=1000).fit(scores.reshape(-1, 1), y)
    return float(fit.coef_[0][0]), float(fit.intercept_[0])


def _logistic(c: float, seed: int) -> Any:
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(
        C=c, class_weight="balanced", max_iter=5000, random_state=seed, solver="lbfgs"
    )


def choose_threshold(
    probability: np.ndarray,
    rules_hit: np.ndarray,
    y: np.ndarray,
    target_recall: float,
    max_masked: float = 1.0,
) -> float:
    """The highest threshold whose combined decision (rule hit OR p >= t) reaches the target
    recall on these labels (the best precision among those that do); if that masks more than
    `max_masked` of the items, the lowest threshold that masks no more than that instead (the
    most recall the masking budget allows)."""
    positives = max(int(y.sum()), 1)
    candidates = sorted({float(p) for p in probability}, reverse=True)
    chosen = 0.0
    for t in sorted({float(p) for p in probability[y == 1]}, reverse=True):
        flagged = rules_hit | (probability >= t)
        if (flagged & (y == 1)).sum() / positives >= target_recall:
            chosen = t
            break
    if (rules_hit | (probability >= chosen)).mean() <= max_masked:
        return chosen
    within = [t for t in candidates if (rules_hit | (probability >= t)).mean() <= max_masked]
    return min(within) if within else float(probability.max()) + 1e-9


def fit_calibrated(
    x: np.ndarray,
    y: np.ndarray,
    families: Sequence[str],
    c: float,
    seed: int,
    folds: int,
    priors: Priors,
) -> SafetyModel:
    """Logistic regression with strength `c` on (x, y), Platt-scaled on out-of-fold scores
    (folds keep families whole); threshold 0 until one is chosen."""
    from sklearn.model_selection import GroupKFold

    final = _logistic(c, seed).fit(x, y)
    oof = np.zeros(len(y))
    for fit_idx, held in GroupKFold(n_splits=folds).split(x, y, list(families)):
        part = _logistic(c, seed).fit(x[fit_idx], y[fit_idx])
        oof[held] = part.decision_function(x[held])
    a, b = _platt(oof, y, seed)
    return SafetyModel(
        final.coef_[0].astype(np.float64), float(final.intercept_[0]), a, b, 0.0, priors, {}
    )


def train(
    train_x: np.ndarray,
    train_y: np.ndarray,
    train_families: Sequence[str],
    val_x: np.ndarray,
    val_y: np.ndarray,
    val_rules_hit: np.ndarray,
    priors: Priors,
    seed: int,
    c_grid: Sequence[float],
    folds: int,
    target_recall: float,
    max_masked: float = 1.0,
) -> tuple[SafetyModel, dict[str, Any]]:
    """Fit on train, choose C and the threshold on validation; return the model and the
    validation figures."""
    from sklearn.metrics import average_precision_score

    scores = {}
    for c in c_grid:
        fit = _logistic(c, seed).fit(train_x, train_y)
        scores[c] = float(average_precision_score(val_y, fit.decision_function(val_x)))
    best_c = max(c_grid, key=lambda c: (scores[c], -c))
    model = fit_calibrated(train_x, train_y, train_families, best_c, seed, folds, priors)
    p_val = model.probability(val_x)
    threshold = choose_threshold(p_val, val_rules_hit, val_y, target_recall, max_masked)
    model = dataclasses.replace(model, threshold=threshold)
    figures = {
        "c_grid_average_precision": {str(c): round(s, 4) for c, s in scores.items()},
        "c": best_c,
        "validation": decision_figures(p_val, val_rules_hit, val_y, threshold),
    }
    return model, figures


def decision_figures(
    probability: np.ndarray, rules_hit: np.ndarray, y: np.ndarray, threshold: float
) -> dict[str, Any]:
    flagged = rules_hit | (probability >= threshold)
    tp = int((flagged & (y == 1)).sum())
    fp = int((flagged & (y == 0)).sum())
    fn = int((~flagged & (y == 1)).sum())
    rules_tp = int((rules_hit & (y == 1)).sum())
    return {
        "items": len(y),
        "unsafe": int(y.sum()),
        "flagged": int(flagged.sum()),
        "recall": round(tp / max(tp + fn, 1), 4),
        "precision": round(tp / max(tp + fp, 1), 4),
        "rules_recall": round(rules_tp / max(int(y.sum()), 1), 4),
        "masked_fraction": round(float(flagged.mean()) if len(y) else 0.0, 4),
    }


def _bootstrap(
    flagged: np.ndarray, y: np.ndarray, families: Sequence[str], seed: int, resamples: int
) -> dict[str, list[float]]:
    """95% percentile intervals of recall, precision and masked fraction, resampling whole
    families (items of one template move together)."""
    by_family: dict[str, list[int]] = {}
    for i, fam in enumerate(families):
        by_family.setdefault(fam, []).append(i)
    groups = list(by_family.values())
    rng = random.Random(seed)
    stats: dict[str, list[float]] = {"recall": [], "precision": [], "masked_fraction": []}
    for _ in range(resamples):
        idx = [i for _ in groups for i in rng.choice(groups)]
        f, t = flagged[idx], y[idx]
        tp = int((f & (t == 1)).sum())
        if t.sum():
            stats["recall"].append(tp / int(t.sum()))
        if f.sum():
            stats["precision"].append(tp / int(f.sum()))
        stats["masked_fraction"].append(float(f.mean()))
    return {
        k: [round(float(np.percentile(v, 2.5)), 4), round(float(np.percentile(v, 97.5)), 4)]
        for k, v in stats.items()
        if v
    }


def train_from_labels(
    labels_path: Path,
    items: Mapping[str, Item],
    rules: SafetyClassifier,
    embed: Embed,
    settings: Mapping[str, Any],
    knowledge_dir: Path | None = None,
) -> tuple[SafetyModel, dict[str, Any]]:
    """The model and its report (manifest fields: data, features, threshold, figures).
    Rule features come from `rules.classify` without item ids, so overrides never feed the
    model (they are applied after it, and always win). `settings["signals"]` names the extra
    signals (signals.py); `knowledge_dir` is the knowledge base template risk reads."""
    rows = read_labels_tsv(labels_path)
    missing = [r.item_id for r in rows if r.item_id not in items]
    if missing:
        raise SafetyModelError(
            f"{labels_path}: {len(missing)} labelled item(s) not in the corpus, "
            f"first {missing[0]!r}"
        )
    seed = int(settings["seed"])
    split = {name: [r for r in rows if r.split == name] for name in ("train", "validation", "test")}
    for name, part in split.items():
        if not any(r.safety == "unsafe" for r in part):
            raise SafetyModelError(f"{labels_path}: the {name} split has no unsafe item")
    all_items = [items[r.item_id] for r in rows]
    vectors = embed([safety_document(it) for it in all_items])
    row_of = {r.item_id: i for i, r in enumerate(rows)}
    rule_x = np.vstack([rule_features(it, rules) for it in all_items])
    names = signals.check_names([str(n) for n in settings.get("signals", [])])
    versions = signals.versions(names, knowledge_dir)
    risk = signals.template_risk(knowledge_dir) if knowledge_dir is not None else None
    extra_x = signals.matrix(names, all_items, risk)

    def y_of(part: Sequence[LabelRow]) -> np.ndarray:
        return np.asarray([int(r.safety == "unsafe") for r in part])

    train_rows = split["train"]
    priors = Priors.fit([items[r.item_id].template_group for r in train_rows], y_of(train_rows))

    def features(part: Sequence[LabelRow], own: bool) -> np.ndarray:
        idx = [row_of[r.item_id] for r in part]
        prior = np.asarray(
            [
                priors.value(
                    items[r.item_id].template_group, int(r.safety == "unsafe") if own else None
                )
                for r in part
            ]
        )
        return feature_matrix(vectors[idx], rule_x[idx], prior, extra_x[idx])

    def rules_hit(part: Sequence[LabelRow]) -> np.ndarray:
        return rule_x[[row_of[r.item_id] for r in part], -1] > 0

    model, figures = train(
        features(train_rows, True),
        y_of(train_rows),
        [r.family for r in train_rows],
        features(split["validation"], False),
        y_of(split["validation"]),
        rules_hit(split["validation"]),
        priors,
        seed,
        [float(c) for c in settings["c_grid"]],
        int(settings["folds"]),
        float(settings["target_recall"]),
        float(settings.get("max_masked", 1.0)),
    )
    model = dataclasses.replace(model, signals=names, signal_versions=versions)
    test = split["test"]
    p_test = model.probability(features(test, False))
    y_test = y_of(test)
    hit_test = rules_hit(test)
    flagged = hit_test | (p_test >= model.threshold)
    figures["test"] = decision_figures(p_test, hit_test, y_test, model.threshold)
    figures["test"]["interval_95"] = _bootstrap(
        flagged, y_test, [r.family for r in test], seed, int(settings.get("bootstrap", 1000))
    )
    per_category = {}
    for code, name in CATEGORY_NAMES.items():
        mask = np.asarray([r.category == code for r in test])
        if mask.any():
            per_category[f"{code} {name}"] = {
                "test_items": int(mask.sum()),
                "recall": round(float(flagged[mask].mean()), 4),
                "rules_recall": round(float(hit_test[mask].mean()), 4),
            }
    figures["test"]["per_category"] = per_category
    figures["splits"] = {
        name: {"items": len(part), "unsafe": int(y_of(part).sum())} for name, part in split.items()
    }
    report = {
        "labels": {"path": str(labels_path), "sha256": sha256_file(labels_path)},
        "feature_version": FEATURE_VERSION,
        "signals": {
            "names": list(names),
            "columns": signals.column_names(names),
            "versions": versions,
        },  # fmt: skip
        "threshold": model.threshold,
        "settings": {k: settings[k] for k in sorted(settings)},
        "figures": figures,
    }
    return model, report
