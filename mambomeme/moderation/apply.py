"""The learned safety model as an ingest step: `model_reclassifier(params, config)` is passed to
`corpus.ingest.ingest`, which calls it after the rules and the knowledge join."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from mambomeme.corpus.ingest import Reclassified
from mambomeme.corpus.safety import classifier_from_config
from mambomeme.corpus.schema import Item
from mambomeme.index.ray_map import ExecutorConfig, ray_session
from mambomeme.models.safety.features import embedder_from_params
from mambomeme.models.safety.model import SignalMatrix, apply, load_model
from mambomeme.models.safety.signals import matrix as signals_matrix
from mambomeme.models.safety.signals import matrix_on_ray, template_risk
from mambomeme.moderation.labels import read_labels_tsv

Reclassify = Callable[[list[Item]], Reclassified]


def model_reclassifier(
    params: Mapping[str, Any],
    config: Mapping[str, Any],
    scores: dict[str, float] | None = None,
) -> Reclassify | None:
    """The configured model (params ingest.safety.model) as a reclassify step, or None when
    the setting is null. A corpus whose records carry hand-made safety labels
    (`safety_labelled: true`, the fixture) keeps them: the model never overrides a human label.
    A configured model that is missing or fails its manifest is an error,
    never a silent fall-back to the rules. `scores`, when given, receives every item's model
    probability (the user's library lists why each masked file is masked). With params
    `build.executor: ray` the features (document embeddings, signal columns) are computed by
    Ray actors, equal to the in-process ones (models/safety/features.py, signals.py); the
    probabilities, rules and labels are applied here as always."""
    folder = (params.get("ingest", {}).get("safety") or {}).get("model")
    if not folder:
        return None
    knowledge_setting = params.get("ingest", {}).get("knowledge")
    knowledge = Path(str(knowledge_setting)) if knowledge_setting else None
    model = load_model(Path(folder), knowledge)
    risk = template_risk(knowledge) if knowledge and "template_risk" in model.signals else None
    rules = classifier_from_config(dict(config))
    labels_path = (params.get("ingest", {}).get("safety") or {}).get("labels")
    known = {r.item_id: r.safety for r in read_labels_tsv(Path(labels_path))} if labels_path else {}
    dense = params["dense"]

    executor = ExecutorConfig.from_params(params.get("build") or {})
    signal_matrix: SignalMatrix = (
        functools.partial(matrix_on_ray, executor=executor)
        if executor.kind == "ray"
        else signals_matrix
    )

    def reclassify(items: list[Item]) -> Reclassified:
        embed = embedder_from_params(dense, executor)
        labelled = dict(known)
        if config.get("safety_labelled"):  # the source's own safety field is a human label
            labelled.update({it.id: it.safety for it in items})
        with ray_session(executor):  # one Ray for the embedding and the signal jobs
            result = apply(model, items, rules, embed, labelled, risk, signal_matrix)
        if scores is not None:
            scores.update(result.probabilities)
        bands = Counter(
            "near" if abs(p - model.threshold) <= 0.1 else "far"
            for p in result.probabilities.values()
        )
        record = {
            "applied": True,
            "dir": str(folder),
            "model_sha256": model.info.get("model_sha256"),
            "labels_sha256": model.info.get("labels", {}).get("sha256"),
            "threshold": model.threshold,
            "signals": list(model.signals),
            "flagged_by_model": len(result.flagged_by_model),
            "labels": str(labels_path or ""),
            "labelled_items": len(known),
            "source_labels": bool(config.get("safety_labelled")),
            "near_threshold": bands["near"],
        }
        return Reclassified(result.items, record, result.probabilities)

    return reclassify
