"""memegen templates (../shared/corpora/memegen/templates/<key>/config.yml).

Config: {"source": "memegen", "path": <memegen dir>, "exclude": [keys] (optional),
"benchmark": <dir with families.csv> (optional), "safety": {...} (optional)}.

Each template -> kind "template", id "memegen:<key>", title = name, template = the canonical
name (the imgflip575k name where template-equivalences.csv pairs the two, else `name`),
aliases = keywords (empty/None skipped), ocr_text = the non-empty example lines joined with
" / ", source_url = source, preview = templates/<key>/default.<ext> (absolute) when present.
The memes-10k and memes-full selections exclude the upstream placeholders `_error` and `_test`
(see shared.py); this adapter on its own keeps every folder unless told to exclude.

The template images have no clear licence: license = "local-evaluation-only" (evaluate and
test locally, never redistribute). An unreadable or malformed config.yml is yielded as
RawRecord(where, None, reason).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from mambomeme.corpus.safety import SafetyClassifier, classifier_from_config
from mambomeme.corpus.sources.base import RawRecord
from mambomeme.corpus.templates import MEMEGEN, TemplateCatalog, load_catalog

LICENSE = "local-evaluation-only"
PLACEHOLDERS = ("_error", "_test")
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".gif", ".webp")


def read_records(config: dict[str, Any]) -> Iterator[RawRecord]:
    root = Path(config["path"])
    benchmark = config.get("benchmark")
    imgflip = config.get("imgflip_templates")
    catalog = load_catalog(
        Path(benchmark) if benchmark else None, Path(imgflip) if imgflip else None
    )
    yield from read_templates(
        root, catalog, classifier_from_config(config), tuple(config.get("exclude") or ())
    )


def source_files(config: dict[str, Any]) -> list[Path]:
    exclude = set(config.get("exclude") or ())
    return [p for p in _configs(Path(config["path"])) if p.parent.name not in exclude]


def _configs(root: Path) -> list[Path]:
    return sorted((root / "templates").glob("*/config.yml"))


def read_templates(
    root: Path,
    catalog: TemplateCatalog,
    classifier: SafetyClassifier,
    exclude: tuple[str, ...] = (),
) -> Iterator[RawRecord]:
    for path in _configs(root):
        key = path.parent.name
        if key in exclude:
            continue
        where = f"{root.name}/templates/{key}/config.yml"
        result = _record(path, key, catalog, classifier)
        if isinstance(result, str):
            yield RawRecord(where, None, result)
        else:
            yield RawRecord(where, result, None)


def _strings(value: object, name: str) -> list[str]:
    """A YAML list of strings with None/empty entries skipped; a scalar string is one entry."""
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise ValueError(f"field '{name}' is not a list")
    out: list[str] = []
    for entry in value:
        if entry is None:
            continue
        if isinstance(entry, int | float) and not isinstance(entry, bool):
            entry = str(entry)  # YAML reads a caption line like 42 as a number
        if not isinstance(entry, str):
            raise ValueError(f"field '{name}' holds a {type(entry).__name__}")
        if entry.strip():
            out.append(entry.strip())
    return out


def _record(
    path: Path, key: str, catalog: TemplateCatalog, classifier: SafetyClassifier
) -> dict[str, Any] | str:
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        return f"unreadable file: {exc.strerror}"
    except UnicodeDecodeError as exc:
        return f"invalid UTF-8 at byte {exc.start}"
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        return f"invalid YAML: {str(exc).splitlines()[0]}"
    if not isinstance(data, dict):
        return "not a YAML mapping"
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        return "field 'name' missing or not a string"
    source = data.get("source")
    if source is not None and not isinstance(source, str):
        return "field 'source' is not a string"
    try:
        keywords = _strings(data.get("keywords"), "keywords")
        example = _strings(data.get("example"), "example")
    except ValueError as exc:
        return str(exc)
    name = name.strip()
    item_id = f"memegen:{key}"
    ocr_text = " / ".join(example)
    decision = classifier.classify(name, ocr_text, "", ", ".join(keywords), item_id)
    return {
        "id": item_id,
        "kind": "template",
        "title": name,
        "aliases": keywords,
        "people": [],
        "template": catalog.canonical_name(MEMEGEN, key, name),
        "template_group": catalog.group(MEMEGEN, key),
        "tags": [],
        "ocr_text": ocr_text,
        "visual_description": "",
        "meaning": "",
        "language": "en",
        "license": LICENSE,
        "attribution": "",
        "source_url": source or "",
        "preview": default_image(path.parent),
        "published": True,
        "available": True,
        "safety": decision.safety,
    }


def default_image(folder: Path) -> str:
    for suffix in IMAGE_SUFFIXES:
        path = folder / f"default{suffix}"
        if path.is_file():
            return str(path.resolve())
    return ""
