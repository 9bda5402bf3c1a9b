"""Train the safety model from a frozen label version and report it on the held-out test split.

`train_from_labels` joins the labels to the items they name, builds the features, fits on the
train split, chooses C and the threshold on validation (model.train) and reports test recall,
precision and masked fraction with bootstrap intervals, overall and per policy category.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mambomeme.corpus.manifest import sha256_file
from mambomeme.corpus.safety import SafetyClassifier
from mambomeme.corpus.schema import Item
from mambomeme.moderation import model as sm
from mambomeme.moderation import signals
from mambomeme.moderation.labels import CATEGORY_NAMES, LabelRow, read_labels_tsv

Embed = Callable[[Sequence[str]], np.ndarray]


def embedder(cache_dir: Path | None, batch_size: int, device: str, shard_size: int) -> Embed:
    """MiniLM embeddings of safety documents (max_seq_length 128), through the build's
    embedding cache when one is configured (shared with memes-full's dense documents)."""
    from mambomeme.index.dense import Encoder, weights_sha256
    from mambomeme.index.embed_cache import EmbeddingCache, document_key, embed_with_cache

    encoder = Encoder(device, sm.MAX_SEQ_LENGTH)

    def embed(texts: Sequence[str]) -> np.ndarray:
        if cache_dir is None:
            return encoder.encode(texts, batch_size=batch_size)
        model_key = f"{weights_sha256()}:{encoder.max_seq_length}"
        cache = EmbeddingCache(cache_dir / model_key[:16], encoder.dimension)
        keys = [document_key(model_key, t) for t in texts]
        matrix, _ = embed_with_cache(
            texts, keys, cache, lambda t: encoder.encode(t, batch_size=batch_size), shard_size
        )
        return matrix

    return embed


def embedder_from_params(dense: Mapping[str, Any]) -> Embed:
    """`embedder` as params `dense` configures it (cache_dir, batch_size, device, shard_size)."""
    cache = Path(dense["cache_dir"]) if dense.get("cache_dir") else None
    return embedder(cache, int(dense["batch_size"]), str(dense["device"]), int(dense["shard_size"]))


def read_corpus_items(config: Mapping[str, Any]) -> dict[str, Item]:
    """Every valid item of a corpus source, by id (the labels name items of this corpus)."""
    from mambomeme.corpus.ingest import source_module, validate_all

    items, _, _ = validate_all(source_module(dict(config)).read_records(dict(config)))
    return {it.id: it for it in items}


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
) -> tuple[sm.SafetyModel, dict[str, Any]]:
    """The model and its report (manifest fields: data, features, threshold, figures).
    Rule features come from `rules.classify` without item ids, so overrides never feed the
    model (they are applied after it, and always win). `settings["signals"]` names the extra
    signals (moderation/signals.py); `knowledge_dir` is the knowledge base template risk reads."""
    rows = read_labels_tsv(labels_path)
    missing = [r.item_id for r in rows if r.item_id not in items]
    if missing:
        raise sm.SafetyModelError(
            f"{labels_path}: {len(missing)} labelled item(s) not in the corpus, "
            f"first {missing[0]!r}"
        )
    seed = int(settings["seed"])
    split = {name: [r for r in rows if r.split == name] for name in ("train", "validation", "test")}
    for name, part in split.items():
        if not any(r.safety == "unsafe" for r in part):
            raise sm.SafetyModelError(f"{labels_path}: the {name} split has no unsafe item")
    all_items = [items[r.item_id] for r in rows]
    vectors = embed([sm.safety_document(it) for it in all_items])
    row_of = {r.item_id: i for i, r in enumerate(rows)}
    rule_x = np.vstack([sm.rule_features(it, rules) for it in all_items])
    names = signals.check_names([str(n) for n in settings.get("signals", [])])
    versions = signals.versions(names, knowledge_dir)
    risk = signals.template_risk(knowledge_dir) if knowledge_dir is not None else None
    extra_x = signals.matrix(names, all_items, risk)

    def y_of(part: Sequence[LabelRow]) -> np.ndarray:
        return np.asarray([int(r.safety == "unsafe") for r in part])

    train_rows = split["train"]
    priors = sm.Priors.fit([items[r.item_id].template_group for r in train_rows], y_of(train_rows))

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
        return sm.feature_matrix(vectors[idx], rule_x[idx], prior, extra_x[idx])

    def rules_hit(part: Sequence[LabelRow]) -> np.ndarray:
        return rule_x[[row_of[r.item_id] for r in part], -1] > 0

    model, figures = sm.train(
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
    figures["test"] = sm.decision_figures(p_test, hit_test, y_test, model.threshold)
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
        "feature_version": sm.FEATURE_VERSION,
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
