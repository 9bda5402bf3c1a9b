"""ImgFlip575K (../shared/corpora/imgflip575k): 100 templates and user-captioned memes of 88.

Config: {"source": "imgflip", "path": <imgflip575k dir>, "top_per_template": null | N,
"benchmark": <dir with families.csv> (optional), "safety": {...} (optional)}.

- templates/<Slug>.json -> kind "template", id "imgflip-template:<Slug>", title = the canonical
  template name (imgflip title minus " Meme Template"), aliases = alternative_names split on
  commas, preview = templates/img/<Slug>.<format> (absolute) when the file exists.
- memes/<Slug>.json.gz -> kind "meme", id "imgflip:<post id>" (last path segment of `post`),
  title = metadata.title (the template name when the user gave none, as imgflip shows it),
  ocr_text = the non-empty caption boxes joined with " / ", attribution = metadata.author,
  template = the canonical template name. The captioned meme image itself is not carried in
  the shared corpus, so preview is the blank template image.
- `top_per_template` keeps, per memes file, the N records with the most img-votes (commas
  stripped, missing = 0), ties broken by post id ascending. Post ids are base-36 strings
  ("3uq7yf") with a few all-digit ones, so they compare as strings (Python str order).

No licence is stated upstream: license = "local-evaluation-only" marks that these items may be
used for local evaluation only (never redistributed). Every file or record that cannot be read
is yielded as RawRecord(where, None, reason); nothing is deduplicated or dropped.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mambomeme.corpus.safety import SafetyClassifier, classifier_from_config
from mambomeme.corpus.sources.base import RawRecord, parse_json
from mambomeme.corpus.templates import IMGFLIP, TemplateCatalog, load_catalog

LICENSE = "local-evaluation-only"
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".gif", ".webp")


def read_records(config: dict[str, Any]) -> Iterator[RawRecord]:
    root = Path(config["path"])
    catalog = catalog_for(root, config.get("benchmark"))
    classifier = classifier_from_config(config)
    yield from read_templates(root, catalog, classifier)
    yield from read_memes(root, catalog, classifier, config.get("top_per_template"))


def source_files(config: dict[str, Any]) -> list[Path]:
    root = Path(config["path"])
    return sorted((root / "templates").glob("*.json")) + sorted((root / "memes").glob("*.json.gz"))


def catalog_for(root: Path, benchmark: str | Path | None) -> TemplateCatalog:
    return load_catalog(Path(benchmark) if benchmark else None, root / "templates")


def read_templates(
    root: Path, catalog: TemplateCatalog, classifier: SafetyClassifier
) -> Iterator[RawRecord]:
    for path in sorted((root / "templates").glob("*.json")):
        where = f"{root.name}/templates/{path.name}"
        try:
            data, error = _load_json(path.read_bytes())
        except OSError as exc:
            data, error = None, f"unreadable file: {exc.strerror}"
        if error is not None:
            yield RawRecord(where, None, error)
            continue
        if not isinstance(data, dict):
            yield RawRecord(where, None, "not a JSON object")
            continue
        title = data.get("title")
        if not isinstance(title, str) or not title.strip():
            yield RawRecord(where, None, "field 'title' missing or not a string")
            continue
        others = data.get("alternative_names") or ""
        if not isinstance(others, str):
            yield RawRecord(where, None, "field 'alternative_names' is not a string")
            continue
        slug = path.stem
        name = catalog.canonical_name(IMGFLIP, slug, title.strip())
        item_id = f"imgflip-template:{slug}"
        url = data.get("template_url")
        yield RawRecord(
            where,
            {
                "id": item_id,
                "kind": "template",
                "title": name,
                "aliases": [a.strip() for a in others.split(",") if a.strip()],
                "people": [],
                "template": name,
                "template_group": catalog.group(IMGFLIP, slug),
                "tags": [],
                "ocr_text": "",
                "visual_description": "",
                "meaning": "",
                "language": "en",
                "license": LICENSE,
                "attribution": "",
                "source_url": url if isinstance(url, str) else "",
                "preview": template_image(root, slug, data.get("format")),
                "published": True,
                "available": True,
                "safety": classifier.classify(name, others, "", "", item_id).safety,
            },
            None,
        )


def template_image(root: Path, slug: str, image_format: object) -> str:
    """Absolute path of templates/img/<Slug>.<format> (or any image suffix), '' if absent."""
    folder = root / "templates" / "img"
    suffixes = ([f".{image_format}"] if isinstance(image_format, str) else []) + list(
        IMAGE_SUFFIXES
    )
    for suffix in suffixes:
        path = folder / f"{slug}{suffix}"
        if path.is_file():
            return str(path.resolve())
    return ""


def read_memes(
    root: Path,
    catalog: TemplateCatalog,
    classifier: SafetyClassifier,
    top_per_template: int | None = None,
) -> Iterator[RawRecord]:
    """One memes file at a time (read whole, then yielded record by record)."""
    for path in sorted((root / "memes").glob("*.json.gz")):
        slug = path.name[: -len(".json.gz")]
        where = f"{root.name}/memes/{path.name}"
        try:
            raw = gzip.decompress(path.read_bytes())
        except (OSError, EOFError, zlib.error) as exc:
            yield RawRecord(where, None, f"unreadable gzip: {exc}")
            continue
        data, error = _load_json(raw)
        if error is not None:
            yield RawRecord(where, None, error)
            continue
        if not isinstance(data, list):
            yield RawRecord(where, None, "not a JSON list of records")
            continue
        template = catalog.canonical_name(IMGFLIP, slug, slug.replace("-", " "))
        context = _MemeContext(
            template, catalog.group(IMGFLIP, slug), template_image(root, slug, None)
        )
        parsed: list[tuple[int, str, dict[str, Any]]] = []
        for index, entry in enumerate(data):
            record_where = f"{where}:{index}"
            result = _meme_record(entry, context)
            if isinstance(result, str):
                yield RawRecord(record_where, None, result)
            else:
                parsed.append((index, record_where, result))
        if top_per_template is not None:
            parsed = _top(parsed, data, top_per_template)
        for _, record_where, record in parsed:
            decision = classifier.classify(
                record["title"], record["ocr_text"], "", "", record["id"]
            )
            yield RawRecord(record_where, {**record, "safety": decision.safety}, None)


class _MemeContext:
    """What every meme of one template file shares."""

    def __init__(self, template: str, group: str, preview: str) -> None:
        self.template = template
        self.group = group
        self.preview = preview


def img_votes(entry: dict[str, Any]) -> int:
    """metadata['img-votes'] as an int: commas stripped, missing or empty = 0."""
    value = entry["metadata"].get("img-votes")
    if value is None:
        return 0
    if isinstance(value, bool):
        raise ValueError("img-votes is a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.replace(",", "").strip()
        return int(text) if text else 0
    raise ValueError(f"img-votes has type {type(value).__name__}")


def _top(
    parsed: list[tuple[int, str, dict[str, Any]]], data: list[Any], limit: int
) -> list[tuple[int, str, dict[str, Any]]]:
    """The `limit` records with most votes, ties by post id ascending (str order); kept in
    file order so output order does not depend on the votes."""
    ranked = sorted(parsed, key=lambda p: (-img_votes(data[p[0]]), post_id(data[p[0]]["post"])))
    keep = {p[0] for p in ranked[:limit]}
    return [p for p in parsed if p[0] in keep]


def post_id(post: str) -> str:
    return post.rstrip("/").rsplit("/", 1)[-1]


def _meme_record(entry: object, context: _MemeContext) -> dict[str, Any] | str:
    """The canonical record, or the reason (naming the field) it cannot be built."""
    if not isinstance(entry, dict):
        return "record is not a JSON object"
    post = entry.get("post")
    if not isinstance(post, str) or not post_id(post):
        return "field 'post' missing or not a string"
    metadata = entry.get("metadata")
    if not isinstance(metadata, dict):
        return "field 'metadata' missing or not an object"
    title = metadata.get("title")
    if not isinstance(title, str):
        return "field 'metadata.title' missing or not a string"
    boxes = entry.get("boxes")
    if not isinstance(boxes, list) or not all(isinstance(b, str) for b in boxes):
        return "field 'boxes' missing or not a list of strings"
    author = metadata.get("author")
    if author is not None and not isinstance(author, str):
        return "field 'metadata.author' is not a string"
    try:
        img_votes(entry)
    except ValueError as exc:
        return f"field 'metadata.img-votes': {exc}"
    title = title.strip() or context.template
    ocr_text = " / ".join(b.strip() for b in boxes if b.strip())
    return {
        "id": f"imgflip:{post_id(post)}",
        "kind": "meme",
        "title": title,
        "aliases": [],
        "people": [],
        "template": context.template,
        "template_group": context.group,
        "tags": [],
        "ocr_text": ocr_text,
        "visual_description": "",
        "meaning": "",
        "language": "en",
        "license": LICENSE,
        "attribution": author or "",
        "source_url": post,
        "preview": context.preview,
        "published": True,
        "available": True,
        "safety": "",  # set after the selection (classifying is the slow part)
    }


def _load_json(raw: bytes) -> tuple[Any, str | None]:
    """(parsed JSON, None) or (None, the reason it cannot be parsed)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"invalid UTF-8 at byte {exc.start}"
    return parse_json(text)  # repeated keys and deep nesting are reasons too
