"""Ingest: read a corpus source, validate every record, write the canonical table and manifest.

Nothing vanishes silently: every input record is either accepted or listed as a reject
("file:line:field:reason"), and the manifest states input = accepted + rejected. In strict mode
any reject fails the ingest and no output is written (no partial publication).

Beside the Item fields, items.parquet carries derived columns serving may read:
`dup_key`, `variant_key`, `content_sha256`, and for moderation
`safety_probability` (float64: the learned safety model's calibrated P(unsafe) for the item,
whatever its final class; null when no model was applied) and `template_risk` (the item's
template's knowledge `risk.level`: none | low | high, "" when its template has no entry).
"""

from __future__ import annotations

import hashlib
import importlib
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import pandas as pd

from mambomeme.corpus.knowledge import (
    KNOWLEDGE_VERSION,
    join_all,
    key,
    knowledge_checksum,
    load_knowledge,
)
from mambomeme.corpus.manifest import sha256_file, sha256_text, write_json_atomic
from mambomeme.corpus.normalise import NORMALISER_VERSION, normalise
from mambomeme.corpus.preview_paths import external_path
from mambomeme.corpus.schema import ALL_FIELDS, LIST_FIELDS, SCHEMA_VERSION, Item, validate_record
from mambomeme.corpus.sources.base import RawRecord
from mambomeme.errors import IngestError, SchemaError

ITEMS_FILE = "items.parquet"
PROBABILITY_COLUMN = "safety_probability"
TEMPLATE_RISK_COLUMN = "template_risk"


@dataclass(frozen=True)
class Reclassified:
    """What a reclassify step (the learned safety model) returns to ingest."""

    items: list[Item]
    record: dict[str, Any]  # for the manifest
    probabilities: dict[str, float] | None  # item id -> P(unsafe), every item; None: no model


@dataclass(frozen=True)
class IngestResult:
    items: tuple[Item, ...]
    rejects: tuple[str, ...]
    input_count: int
    manifest: dict[str, Any]


def source_module(config: dict[str, Any]) -> Any:
    name = str(config.get("source", ""))
    if not name.isidentifier():
        raise IngestError(f"corpus source {name!r} is not a valid source name")
    try:
        return importlib.import_module(f"mambomeme.corpus.sources.{name}")
    except ModuleNotFoundError as exc:
        if exc.name == f"mambomeme.corpus.sources.{name}":
            raise IngestError(f"unknown corpus source {name!r}") from None
        raise


def duplicate_key(item: Item) -> str:
    """Items with the same key are exact duplicates: same image bytes, or (with no image hash)
    the same template and the same caption text. Items with neither are their own key."""
    if item.image_sha256:
        return "img:" + item.image_sha256
    caption = normalise(item.ocr_text).casefold()
    if caption:
        text = normalise(item.template).casefold() + "\n" + caption
        return "cap:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
    return "id:" + item.id


VARIANT_VERSION = "variant-v1"
_WORD = re.compile(r"[^\W_]+")


def caption_skeleton(text: str) -> str:
    """What is left of a caption when the edits of a re-upload are undone: case, punctuation,
    spacing, stretched letters ("sooo") and word order. Two captions with the same skeleton
    are near-identical."""
    words = _WORD.findall(re.sub(r"['\u2019]", "", normalise(text).casefold()))
    squeezed = {re.sub(r"(.)\1{2,}", r"\1", w) for w in words}
    return " ".join(sorted(squeezed))


def variant_key(item: Item) -> str:
    """Items with the same key are variants of one meme: the same picture (the same template
    group; without one, the same image bytes) with a near-identical caption (the same
    `caption_skeleton`), e.g. a re-encoded re-upload. The engine shows at most
    `search.group_cap` items of a key; items of one template with different captions are
    different memes and are never capped together. Exact duplicates (`duplicate_key`) collapse
    before this."""
    skeleton = caption_skeleton(item.ocr_text)
    picture = item.template_group or item.image_sha256
    if not skeleton or not picture:
        return "id:" + item.id
    text = picture + "\n" + skeleton
    return "var:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def validate_all(records: Iterable[RawRecord]) -> tuple[list[Item], list[str], int]:
    """Validate every raw record; duplicate ids are rejects too (the first one wins), and so is
    a record whose generated preview file another record already names."""
    items: list[Item] = []
    rejects: list[str] = []
    seen: dict[str, str] = {}
    previews: dict[str, str] = {}  # relative preview path -> where its first record is
    count = 0
    for where, record, error in records:
        count += 1
        if record is None:
            rejects.append(f"{where}:<record>:{error}")
            continue
        try:
            item = validate_record(record, where)
        except SchemaError as exc:
            rejects.append(str(exc))
            continue
        if item.id in seen:
            rejects.append(f"{where}:id:duplicate id {item.id!r} (first at {seen[item.id]})")
            continue
        preview = generated_preview(item)
        if preview in previews:
            rejects.append(f"{where}:preview:same preview file as {previews[preview]}")
            continue
        seen[item.id] = where
        if preview:
            previews[preview] = where
        items.append(item)
    items.sort(key=lambda it: it.id)
    return items, rejects, count


def generated_preview(item: Item) -> str:
    """The preview file ingest draws for the item (normalised relative path), else ""."""
    raw = item.preview.replace("\\", "/")
    if not raw or external_path(item.preview) is not None:
        return ""
    return PurePosixPath(raw).as_posix()


def items_frame(
    items: Iterable[Item],
    probabilities: Mapping[str, float] | None = None,
    template_risk: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """The table ingest writes: Item fields plus derived columns (see the module docstring).
    `probabilities` (item id -> P(unsafe)) must cover every item when given; `template_risk`
    maps a normalised template name to its risk level."""
    rows = []
    for item in items:
        row = item.to_record()
        row["dup_key"] = duplicate_key(item)
        row["variant_key"] = variant_key(item)
        row["content_sha256"] = item.content_sha256()
        if probabilities is None:
            row[PROBABILITY_COLUMN] = None
        elif item.id in probabilities:
            row[PROBABILITY_COLUMN] = float(probabilities[item.id])
        else:
            raise IngestError(f"safety model gave no probability for item {item.id!r}")
        risk = (template_risk or {}).get(key(item.template)) if item.template else None
        row[TEMPLATE_RISK_COLUMN] = risk or ""
        rows.append(row)
    columns = list(ALL_FIELDS) + ["dup_key", "variant_key", "content_sha256"]
    columns += [PROBABILITY_COLUMN, TEMPLATE_RISK_COLUMN]
    frame = pd.DataFrame(rows, columns=columns)
    frame[PROBABILITY_COLUMN] = frame[PROBABILITY_COLUMN].astype("float64")
    return frame


def load_items(build_dir: Path) -> list[Item]:
    """Read the canonical table back into Items (order: by id)."""
    frame = pd.read_parquet(build_dir / ITEMS_FILE)
    items = []
    for row in frame.to_dict("records"):
        values = {name: row[name] for name in ALL_FIELDS}
        for name in LIST_FIELDS:
            values[name] = tuple(str(v) for v in values[name])
        values["published"] = bool(values["published"])
        values["available"] = bool(values["available"])
        items.append(Item(**values))
    return items


def ingest(
    corpus: str,
    config: dict[str, Any],
    build_dir: Path,
    manifest_path: Path,
    strict: bool,
    knowledge_dir: Path | None = None,
    reclassify: Callable[[list[Item]], Reclassified] | None = None,
) -> IngestResult:
    """Run one ingest; writes build_dir/items.parquet, previews and the manifest.

    `reclassify` (the learned safety model, mambomeme/moderation) may mark more items unsafe
    after the rules; it returns the items, a record for the manifest and every item's
    probability (column `safety_probability`)."""
    module = source_module(config)
    files = [Path(p) for p in module.source_files(config)]
    items, rejects, count = validate_all(module.read_records(config))
    knowledge = {"version": KNOWLEDGE_VERSION, "dir": "", "sha256": "", "items_joined": 0}
    risk: dict[str, str] = {}
    if knowledge_dir is not None:
        entries = load_knowledge(knowledge_dir)
        risk = {k: e.risk_level for k, e in entries.items()}
        joined = join_all(items, entries)
        knowledge.update(
            dir=str(knowledge_dir),
            sha256=knowledge_checksum(knowledge_dir),
            entries=len(entries),
            items_joined=sum(a != b for a, b in zip(items, joined, strict=True)),
        )
        items = joined
    safety_model: dict[str, Any] = {"applied": False}
    probabilities: dict[str, float] | None = None
    if reclassify is not None:
        done = reclassify(items)
        items, safety_model, probabilities = done.items, done.record, done.probabilities
    if count != len(items) + len(rejects):
        raise IngestError(f"record accounting broken: {count} != {len(items)} + {len(rejects)}")
    if strict and rejects:
        shown = "\n  ".join(rejects[:20])
        more = f"\n  ... and {len(rejects) - 20} more" if len(rejects) > 20 else ""
        raise IngestError(f"{len(rejects)} rejected record(s) in strict mode:\n  {shown}{more}")
    (build_dir / "previews").mkdir(parents=True, exist_ok=True)
    previews = _generate_previews(items, build_dir)
    frame = items_frame(items, probabilities, risk)
    tmp = build_dir / (ITEMS_FILE + ".tmp")
    frame.to_parquet(tmp, index=False)
    tmp.replace(build_dir / ITEMS_FILE)
    manifest = _manifest(corpus, config, files, items, rejects, count, previews)
    manifest["knowledge"] = knowledge
    manifest["safety_model"] = safety_model
    write_json_atomic(manifest_path, manifest)
    return IngestResult(tuple(items), tuple(rejects), count, manifest)


def _generate_previews(items: list[Item], build_dir: Path) -> dict[str, str]:
    relative = [it for it in items if it.preview and external_path(it.preview) is None]
    if not relative:
        return {}
    from mambomeme.corpus.previews import generate_previews

    return dict(generate_previews(relative, build_dir))


def _manifest(
    corpus: str,
    config: dict[str, Any],
    files: list[Path],
    items: list[Item],
    rejects: list[str],
    count: int,
    previews: dict[str, str],
) -> dict[str, Any]:
    per_item = {item.id: item.content_sha256() for item in items}
    listing = "".join(f"{item_id}\t{sha}\n" for item_id, sha in sorted(per_item.items()))
    return {
        "corpus": corpus,
        "source": {k: str(v) for k, v in sorted(config.items())},
        "schema_version": SCHEMA_VERSION,
        "normaliser_version": NORMALISER_VERSION,
        "source_files": {str(p): sha256_file(p) for p in files},
        "counts": {
            "input": count,
            "accepted": len(items),
            "rejected": len(rejects),
            "by_kind": dict(sorted(Counter(it.kind for it in items).items())),
            "eligible": sum(it.eligible for it in items),
            "unsafe": sum(it.safety == "unsafe" for it in items),
            "unpublished": sum(not it.published for it in items),
            "unavailable": sum(not it.available for it in items),
            "unlicensed": sum(not it.licensed for it in items),
            "previews_generated": len(previews),
        },
        "items_sha256": sha256_text(listing),
        "items": per_item,
        "previews": dict(sorted(previews.items())),
        "rejects": rejects,
    }
