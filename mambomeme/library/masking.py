"""What the safety mask hides in the user's library, why, and the owner's word over it.

The build (library/build.py) masks an image as the pipeline does: the rules (lexicon hits),
then the learned safety model when the repository has built it. The owner may overrule both per
file (`mambomeme library allow PATH` / `deny PATH`, kept in the state store): `with_overrides`
applies them after every other step, so an allowed file is searchable and a denied one hidden,
whatever the rules or the model say. `masked_files` lists every masked file with its reason, for
`mambomeme library masked` and for `add`'s output.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mambomeme.corpus.ingest import Reclassified
from mambomeme.corpus.preview_paths import preview_of
from mambomeme.corpus.safety import SafetyClassifier
from mambomeme.corpus.schema import Item

Reclassify = Callable[[list[Item]], Reclassified]


def with_overrides(reclassify: Reclassify | None, decisions: Mapping[str, str]) -> Reclassify:
    """`reclassify` (the model step, or none) followed by the owner's decisions (item id ->
    allow | deny); the step's record gains the number of items each decision changed."""

    def run(items: list[Item]) -> Reclassified:
        record: dict[str, Any] = {"applied": False}
        probabilities: dict[str, float] | None = None  # no model: no probabilities column
        if reclassify is not None:
            found = reclassify(items)
            items, record, probabilities = found.items, found.record, found.probabilities
        out, changed = [], {"allow": 0, "deny": 0}
        for item in items:
            decision = decisions.get(item.id)
            wanted = {"allow": "safe", "deny": "unsafe"}.get(decision or "", item.safety)
            if wanted != item.safety and decision is not None:
                item = dataclasses.replace(item, safety=wanted)
                changed[decision] += 1
            out.append(item)
        return Reclassified(out, {**record, "owner_overrides": changed}, probabilities)

    return run


def masked_files(
    items: Sequence[Item],
    paths: Mapping[str, str],
    decisions: Mapping[str, str],
    scores: Mapping[str, float],
    threshold: float | None,
    rules: SafetyClassifier,
) -> list[dict[str, str]]:
    """One entry per item the safety mask hides: its file (`path`, stored as a preview: a
    file:// URI when the name is not UTF-8), id, title and reason, in path order. `paths` maps
    item id -> file path; `scores` the model probabilities (empty without a model)."""
    found = []
    for item in items:
        if item.safety != "unsafe":
            continue
        path = paths.get(item.id, "")
        found.append(
            {
                "path": preview_of(path),
                "id": item.id,
                "title": item.title,
                "reason": _reason(item, decisions, scores, threshold, rules),
            }
        )
    return sorted(found, key=lambda entry: entry["path"])


def _reason(
    item: Item,
    decisions: Mapping[str, str],
    scores: Mapping[str, float],
    threshold: float | None,
    rules: SafetyClassifier,
) -> str:
    if decisions.get(item.id) == "deny":
        return "denied by you (mambomeme library deny)"
    decision = rules.classify(
        item.title, item.ocr_text, item.meaning, item.visual_description, item.id
    )
    if decision.safety == "unsafe":
        return f"rule {decision.reason}"
    if item.id in scores:
        limit = f" >= threshold {threshold:.3f}" if threshold is not None else ""
        return f"safety model score {scores[item.id]:.3f}{limit}"
    return "marked unsafe by the corpus rules"
