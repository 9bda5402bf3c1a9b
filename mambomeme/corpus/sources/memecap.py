"""MemeCap test split (../shared/corpora/memecap/memes-test.json): 559 Reddit memes.

Config: {"source": "memecap", "path": <memes-test.json>, "safety": {...} (optional)}.

Each record -> kind "meme", id "memecap:<post_id>", title, visual_description = img_captions
joined with " ", meaning = meme_captions joined with " ", tags = [category]. MemeCap names no
template, so template = "" and each meme is its own group "memecap:<post_id>". The Reddit image
is not carried in the shared corpus: preview = "" and source_url = the upstream image URL.

No licence is stated upstream: license = "local-evaluation-only" (local evaluation only).
The file is read whole; an unparseable file or record is yielded as RawRecord(where, None,
reason), duplicates included.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mambomeme.corpus.safety import SafetyClassifier, classifier_from_config
from mambomeme.corpus.sources.base import RawRecord, parse_json

LICENSE = "local-evaluation-only"


def read_records(config: dict[str, Any]) -> Iterator[RawRecord]:
    yield from read_memes(Path(config["path"]), classifier_from_config(config))


def source_files(config: dict[str, Any]) -> list[Path]:
    return [Path(config["path"])]


def read_memes(path: Path, classifier: SafetyClassifier) -> Iterator[RawRecord]:
    where = f"{path.parent.name}/{path.name}"
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        yield RawRecord(where, None, f"unreadable file: {exc.strerror}")
        return
    except UnicodeDecodeError as exc:
        yield RawRecord(where, None, f"invalid UTF-8 at byte {exc.start}")
        return
    data, error = parse_json(text)  # repeated keys and deep nesting are rejects too
    if error is not None:
        yield RawRecord(where, None, error)
        return
    if not isinstance(data, list):
        yield RawRecord(where, None, "not a JSON list of records")
        return
    for index, entry in enumerate(data):
        result = _record(entry, classifier)
        if isinstance(result, str):
            yield RawRecord(f"{where}:{index}", None, result)
        else:
            yield RawRecord(f"{where}:{index}", result, None)


def _text_list(entry: dict[str, Any], name: str) -> list[str]:
    value = entry.get(name)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"field '{name}' missing or not a list of strings")
    return [v.strip() for v in value if v.strip()]


def _record(entry: object, classifier: SafetyClassifier) -> dict[str, Any] | str:
    if not isinstance(entry, dict):
        return "record is not a JSON object"
    for name in ("post_id", "title"):
        if not isinstance(entry.get(name), str) or not entry[name].strip():
            return f"field '{name}' missing or not a string"
    category = entry.get("category")
    if category is not None and not isinstance(category, str):
        return "field 'category' is not a string"
    url = entry.get("url")
    try:
        visual = " ".join(_text_list(entry, "img_captions"))
        meaning = " ".join(_text_list(entry, "meme_captions"))
    except ValueError as exc:
        return str(exc)
    post_id = entry["post_id"].strip()
    item_id = f"memecap:{post_id}"
    title = entry["title"].strip()
    decision = classifier.classify(title, "", meaning, visual, item_id)
    return {
        "id": item_id,
        "kind": "meme",
        "title": title,
        "aliases": [],
        "people": [],
        "template": "",
        "template_group": item_id,
        "tags": [category.strip()] if category and category.strip() else [],
        "ocr_text": "",
        "visual_description": visual,
        "meaning": meaning,
        "language": "en",
        "license": LICENSE,
        "attribution": "",
        "source_url": url if isinstance(url, str) else "",
        "preview": "",
        "published": True,
        "available": True,
        "safety": decision.safety,
    }
