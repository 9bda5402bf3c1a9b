"""The review queue: items whose calibrated probability lies near the threshold go to a
maintainer as an annotator sheet; the verdicts become overrides and the next label version.

`queue` picks the items; `import_verdicts` validates a verdict file against its sheet, appends
new overrides (an item that already has one keeps it: earlier verdicts are never overwritten)
and freezes a new label version holding the old labels plus the new ones. The old version and
the verdict file are never touched.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mambomeme.corpus.safety import parse_overrides
from mambomeme.corpus.schema import Item
from mambomeme.errors import BenchmarkError
from mambomeme.moderation import labels as lab


def queue(
    items: Sequence[Item],
    probabilities: Mapping[str, float],
    threshold: float,
    band: float,
    limit: int,
    skip: set[str],
) -> list[Item]:
    """Up to `limit` items with |p - threshold| <= band, closest first, leaving out `skip`
    (already labelled or overridden)."""
    near = [
        it for it in items if it.id not in skip and abs(probabilities[it.id] - threshold) <= band
    ]
    near.sort(key=lambda it: (abs(probabilities[it.id] - threshold), it.id))
    return near[:limit]


def review_near_threshold(
    build: Path,
    model_dir: Path,
    labels_dir: Path,
    params: Mapping[str, Any],
    out: Path,
    band: float,
    limit: int,
) -> tuple[list[Item], float]:
    """Apply the safety model in `model_dir` to the build's items and write the review sheet of
    up to `limit` items within `band` of its threshold to `out`, leaving out items the label
    version `labels_dir` holds or an override covers: (the items written, the threshold)."""
    from mambomeme.corpus.ingest import load_items
    from mambomeme.corpus.safety import load_classifier
    from mambomeme.models.safety import model as sm
    from mambomeme.models.safety.features import embedder_from_params

    safety_model = sm.load_model(model_dir)
    items = load_items(build)
    embed = embedder_from_params(params["dense"])
    rules = load_classifier()
    applied = sm.apply(safety_model, items, rules, embed)
    labelled = {r.item_id for r in lab.read_labels_tsv(labels_dir / "labels.tsv")}
    chosen = queue(
        items,
        applied.probabilities,
        safety_model.threshold,
        band,
        limit,
        labelled | set(rules.overrides),
    )
    write_queue(out, chosen)
    return chosen, safety_model.threshold


def write_queue(folder: Path, chosen: Sequence[Item]) -> None:
    folder = Path(folder)
    if folder.exists():
        raise BenchmarkError(f"{folder} exists; a review queue is never overwritten")
    folder.mkdir(parents=True)
    (folder / "sheet.csv").write_text(lab.sheet_csv(chosen), encoding="utf-8")
    (folder / "ids.txt").write_text("".join(f"{it.id}\n" for it in chosen), encoding="utf-8")


@dataclass(frozen=True)
class Imported:
    overrides_added: int
    overrides_kept: int  # items that already had an override (the earlier verdict stays)
    labels_added: int
    new_version: Path


def import_verdicts(
    verdicts: Path,
    sheet: Path,
    labels_dir: Path,
    new_dir: Path,
    overrides_path: Path,
    families: Mapping[str, str],
    split_seed: int,
    reason: str,
) -> Imported:
    ids = (Path(sheet) / "ids.txt").read_text(encoding="utf-8").split()
    found = lab.read_label_file(verdicts, ids)  # refuses a malformed file, naming file and row
    old_rows = lab.read_labels_tsv(Path(labels_dir) / "labels.tsv")
    final = {r.item_id: lab.SafetyLabel(r.item_id, r.safety, r.category) for r in old_rows}
    unknown = sorted(i for i in found if i not in families)
    if unknown:
        raise BenchmarkError(f"{verdicts}: item {unknown[0]!r} is not in the corpus")
    added_labels = 0
    for item_id, verdict in found.items():
        if item_id not in final:
            final[item_id] = lab.SafetyLabel(item_id, verdict.safety, verdict.category)
            added_labels += 1
    existing = parse_overrides(Path(overrides_path))
    new_rows = [v for i, v in sorted(found.items()) if i not in existing]
    old_label_files = {"labels.tsv": lab.labels_tsv(final, families, split_seed)}
    lab.freeze(new_dir, old_label_files)  # refuses an existing version before anything else
    if new_rows:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        for v in new_rows:
            writer.writerow([v.item_id, v.safety, reason])
        text = Path(overrides_path).read_text(encoding="utf-8")
        if text and not text.endswith("\n"):
            text += "\n"
        tmp = Path(overrides_path).with_name(f".{Path(overrides_path).name}.tmp")
        tmp.write_text(text + out.getvalue(), encoding="utf-8")
        tmp.replace(overrides_path)
    return Imported(len(new_rows), len(found) - len(new_rows), added_labels, Path(new_dir))
