"""The learned safety model: which items are unsafe under SAFETY-POLICY.md v1 beyond what the
lexicon catches (stereotype jokes, drugs by nickname, innuendo carry no keyword).

This module loads, verifies and applies it (serving: moderation/apply.py at ingest and in the
library); features.py computes its features, train.py fits it (stage safety_model).

Features per item (FEATURE_VERSION, features.py):
  - the MiniLM embedding of the item's own text (`safety_document`: title, names, tags,
    caption, description, meaning; not the template knowledge every meme of a template shares);
  - the rules' decision (lexicon and combination hits, without overrides) as one-hot
    categories 1-7 plus "any";
  - a per-template prior: the template group's unsafe rate in the training labels, smoothed
    towards the overall rate (leave-one-out for the training items themselves);
  - the extra signals params `safety_model.signals` names (signals.py: the template
    risk field of knowledge/, HateSonar, alt-profanity-check), recorded in the model with the
    versions that computed them; a model whose signals were computed by other versions is
    refused at load. A `safety-features-1` model is one with no extra signals.

Model (fitted by train.py): scikit-learn logistic regression (class-balanced, seeded, L2
strength chosen on validation by average precision), with Platt scaling fitted on out-of-fold
scores grouped by family, so its output is a calibrated probability. The threshold is the
highest one whose combined decision (rules OR model) has recall >= `target_recall` on
validation. Test is never used to fit or choose anything; it is only reported.

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
from mambomeme.models.safety import signals
from mambomeme.models.safety.features import (
    FEATURE_VERSION,
    PRIOR_STRENGTH,
    Embed,
    Priors,
    feature_matrix,
    rule_features,
    safety_document,
)

# (signal names, items, template risk levels) -> signal columns: signals.matrix or matrix_on_ray
SignalMatrix = Callable[[Sequence[str], Sequence[Item], Mapping[str, str] | None], np.ndarray]
READABLE_VERSIONS = ("safety-features-1", FEATURE_VERSION)  # 1 = no `signals`
MODEL_FILE = "model.json"
MANIFEST_FILE = "manifest.json"


class SafetyModelError(MamboMemeError):
    """A safety model that is missing, malformed or does not match its manifest."""


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
    signal_matrix: SignalMatrix = signals.matrix,
) -> Applied:
    """Each item's model probability; an item the rules left safe becomes unsafe when the
    probability reaches the threshold. An override always wins (its class stays) and a rule
    hit is never un-flagged. `known` (item id -> safe | unsafe, the frozen human labels of dev
    items) acts like an override list: a label `unsafe` masks the item (also against an
    earlier single-reviewer `safe` override: the two-pass label is the later, stricter verdict),
    a label `safe` keeps the model from flagging it (a rule hit still stands). `risk` (template
    key -> risk level, `signals.template_risk`) is needed when the model uses that signal.
    `embed` and `signal_matrix` compute the features here or on Ray (signals.matrix_on_ray);
    the probabilities and the decisions are always computed here, over the whole matrix."""
    known = known or {}

    if not items:
        return Applied([], {}, [])
    vectors = embed([safety_document(it) for it in items])
    rule_x = np.vstack([rule_features(it, rules) for it in items])
    prior_x = np.asarray([model.priors.value(it.template_group) for it in items])
    extra = signal_matrix(model.signals, items, risk) if model.signals else None
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
