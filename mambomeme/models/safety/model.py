"""The learned safety model: which items are unsafe under SAFETY-POLICY.md v1 beyond what the
lexicon catches (stereotype jokes, drugs by nickname, innuendo carry no keyword).

Features per item (FEATURE_VERSION):
  - the MiniLM embedding of the item's own text (`safety_document`: title, names, tags,
    caption, description, meaning; not the template knowledge every meme of a template shares);
  - the rules' decision (lexicon and combination hits, without overrides) as one-hot
    categories 1-7 plus "any";
  - a per-template prior: the template group's unsafe rate in the training labels, smoothed
    towards the overall rate (leave-one-out for the training items themselves);
  - the extra signals params `safety_model.signals` names (moderation/signals.py: the template
    risk field of knowledge/, HateSonar, alt-profanity-check), recorded in the model with the
    versions that computed them; a model whose signals were computed by other versions is
    refused at load. A `safety-features-1` model is one with no extra signals.

Model: scikit-learn logistic regression (class-balanced, seeded, L2 strength chosen on
validation by average precision), with Platt scaling fitted on out-of-fold scores grouped by
family, so its output is a calibrated probability. The threshold is the highest one whose
combined decision (rules OR model) has recall >= `target_recall` on validation. Test is never
used to fit or choose anything; it is only reported.

The artifact is plain JSON (weights, calibration, threshold, priors) plus a manifest with its
sha256: applying it needs NumPy only, and a model whose bytes do not match its manifest is
refused at load.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mambomeme.corpus.safety import SafetyClassifier
from mambomeme.corpus.schema import Item
from mambomeme.errors import MamboMemeError
from mambomeme.moderation import signals

FEATURE_VERSION = "safety-features-3"  # -2 was the unadopted zero-shot branch
READABLE_VERSIONS = ("safety-features-1", FEATURE_VERSION)  # 1 = no `signals`
MODEL_FILE = "model.json"
MANIFEST_FILE = "manifest.json"
RULE_CATEGORIES = ("1", "2", "3", "4", "5", "6", "7")
OWN_TEXT_WITHOUT = frozenset({"template_aliases", "template_visual", "template_meaning"})
MAX_SEQ_LENGTH = 128  # = memes-full's dense documents, so its embedding cache is shared
PRIOR_STRENGTH = 5.0

Embed = Callable[[Sequence[str]], np.ndarray]


class SafetyModelError(MamboMemeError):
    """A safety model that is missing, malformed or does not match its manifest."""


def safety_document(item: Item) -> str:
    """The text the model embeds: the item's own fields (dense.document without knowledge)."""
    from mambomeme.index.dense import document

    return document(item, OWN_TEXT_WITHOUT)


def rule_features(item: Item, rules: SafetyClassifier) -> np.ndarray:
    """One-hot rule category (1-7) and 'any rule hit', from the lexicon and combos only."""
    decision = rules.classify(item.title, item.ocr_text, item.meaning, item.visual_description)
    out = np.zeros(len(RULE_CATEGORIES) + 1, dtype=np.float32)
    if decision.safety == "unsafe":
        out[-1] = 1.0
        if decision.category in RULE_CATEGORIES:
            out[RULE_CATEGORIES.index(decision.category)] = 1.0
    return out


@dataclass(frozen=True)
class Priors:
    """Smoothed unsafe rate per template group from training labels."""

    overall: float
    counts: Mapping[str, tuple[int, int]]  # group -> (unsafe, labelled)

    @classmethod
    def fit(cls, groups: Sequence[str], y: Sequence[int] | np.ndarray) -> Priors:
        counts: dict[str, list[int]] = {}
        for group, label in zip(groups, y, strict=True):
            c = counts.setdefault(group, [0, 0])
            c[0] += int(label)
            c[1] += 1
        overall = float(np.mean(y)) if len(y) else 0.0
        return cls(overall, {g: (c[0], c[1]) for g, c in counts.items()})

    def value(self, group: str, own_label: int | None = None) -> float:
        unsafe, n = self.counts.get(group, (0, 0))
        if own_label is not None and n:  # leave the item's own label out
            unsafe, n = unsafe - own_label, n - 1
        return (unsafe + PRIOR_STRENGTH * self.overall) / (n + PRIOR_STRENGTH)


def feature_matrix(
    embeddings: np.ndarray, rules: np.ndarray, priors: np.ndarray, extra: np.ndarray | None = None
) -> np.ndarray:
    """[embedding | rule one-hots | template prior | extra signal columns]."""
    blocks = [embeddings, rules, priors.reshape(-1, 1)]
    if extra is not None:
        blocks.append(extra.reshape(len(embeddings), -1))
    return np.hstack(blocks).astype(np.float64)


@dataclass(frozen=True)
class SafetyModel:
    weights: np.ndarray
    intercept: float
    platt_a: float
    platt_b: float
    threshold: float
    priors: Priors
    info: Mapping[str, Any]
    signals: tuple[str, ...] = ()
    signal_versions: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def probability(self, features: np.ndarray) -> np.ndarray:
        score = features @ self.weights + self.intercept
        out: np.ndarray = 1.0 / (1.0 + np.exp(-(self.platt_a * score + self.platt_b)))
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "feature_version": FEATURE_VERSION,
            "signals": list(self.signals),
            "signal_versions": dict(sorted(self.signal_versions.items())),
            "weights": [float(w) for w in self.weights],
            "intercept": self.intercept,
            "platt": [self.platt_a, self.platt_b],
            "threshold": self.threshold,
            "priors": {
                "overall": self.priors.overall,
                "strength": PRIOR_STRENGTH,
                "groups": {g: list(c) for g, c in sorted(self.priors.counts.items())},
            },
        }


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


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_model(folder: Path, model: SafetyModel, manifest: Mapping[str, Any]) -> None:
    """model.json and manifest.json (with the model's sha256), each written whole."""
    folder.mkdir(parents=True, exist_ok=True)
    data = (json.dumps(model.to_json(), indent=1, sort_keys=True) + "\n").encode("utf-8")
    record = dict(manifest, model_file=MODEL_FILE, model_sha256=sha256_bytes(data))
    for name, payload in ((MODEL_FILE, data), (MANIFEST_FILE, _json_bytes(record))):
        tmp = folder / f".{name}.tmp"
        tmp.write_bytes(payload)
        tmp.replace(folder / name)


def _json_bytes(value: Any) -> bytes:
    return (json.dumps(value, indent=2, sort_keys=True) + "\n").encode("utf-8")


def load_model(folder: Path, knowledge_dir: Path | None = None) -> SafetyModel:
    """The model in `folder`, verified against its manifest (sha256, feature version) and,
    when it uses extra signals, against the versions that compute them here (`knowledge_dir`:
    the knowledge base the template risk signal reads)."""
    manifest_path = Path(folder) / MANIFEST_FILE
    model_path = Path(folder) / MODEL_FILE
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        data = model_path.read_bytes()
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SafetyModelError(f"{folder}: cannot read the safety model: {exc}") from None
    if sha256_bytes(data) != manifest.get("model_sha256"):
        raise SafetyModelError(
            f"{model_path}: sha256 does not match {manifest_path}; refusing the safety model"
        )
    raw = json.loads(data)
    if raw.get("feature_version") not in READABLE_VERSIONS:
        raise SafetyModelError(
            f"{model_path}: feature version {raw.get('feature_version')!r}, "
            f"this code computes {FEATURE_VERSION!r}"
        )
    groups = raw["priors"]["groups"]
    priors = Priors(
        float(raw["priors"]["overall"]), {g: (int(c[0]), int(c[1])) for g, c in groups.items()}
    )
    names = tuple(str(n) for n in raw.get("signals", []))
    recorded = {str(k): str(v) for k, v in raw.get("signal_versions", {}).items()}
    if names:
        try:
            here = signals.versions(names, knowledge_dir)
        except signals.SignalError as exc:
            raise SafetyModelError(f"{model_path}: {exc}") from None
        if here != recorded:
            wrong = next(n for n in names if here.get(n) != recorded.get(n))
            raise SafetyModelError(
                f"{model_path}: signal {wrong!r} was computed by {recorded.get(wrong)!r}, "
                f"here by {here.get(wrong)!r}; retrain the model (stage safety_model)"
            )
    a, b = raw["platt"]
    return SafetyModel(
        np.asarray(raw["weights"], dtype=np.float64),
        float(raw["intercept"]),
        float(a),
        float(b),
        float(raw["threshold"]),
        priors,
        manifest,
        names,
        recorded,
    )


@dataclass(frozen=True)
class Applied:
    items: list[Item]
    probabilities: dict[str, float]
    flagged_by_model: list[str]  # ids the model made unsafe (rules and overrides said safe)


def apply(
    model: SafetyModel,
    items: Sequence[Item],
    rules: SafetyClassifier,
    embed: Embed,
    known: Mapping[str, str] | None = None,
    risk: Mapping[str, str] | None = None,
) -> Applied:
    """Each item's model probability; an item the rules left safe becomes unsafe when the
    probability reaches the threshold. An override always wins (its class stays) and a rule
    hit is never un-flagged. `known` (item id -> safe | unsafe, the frozen human labels of dev
    items) acts like an override list: a label `unsafe` masks the item (also against an
    earlier single-reviewer `safe` override: the two-pass label is the later, stricter verdict),
    a label `safe` keeps the model from flagging it (a rule hit still stands). `risk` (template
    key -> risk level, `signals.template_risk`) is needed when the model uses that signal."""
    known = known or {}

    if not items:
        return Applied([], {}, [])
    vectors = embed([safety_document(it) for it in items])
    rule_x = np.vstack([rule_features(it, rules) for it in items])
    prior_x = np.asarray([model.priors.value(it.template_group) for it in items])
    extra = signals.matrix(model.signals, items, risk) if model.signals else None
    p = model.probability(feature_matrix(vectors, rule_x, prior_x, extra))
    out: list[Item] = []
    flagged: list[str] = []
    for item, prob in zip(items, p, strict=True):
        label = known.get(item.id)
        if item.safety == "safe" and (label == "unsafe" or item.id not in rules.overrides):
            if label == "unsafe" or (label is None and prob >= model.threshold):
                item = dataclasses.replace(item, safety="unsafe")
                flagged.append(item.id)
        out.append(item)
    return Applied(out, {it.id: float(x) for it, x in zip(items, p, strict=True)}, flagged)
