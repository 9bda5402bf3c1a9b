"""The canonical item schema: one typed record per meme or template, validated field by field.

Every source adapter produces plain dicts; `validate_record` turns one into an `Item` or raises
`SchemaError` naming the record and field. Strings are kept as given (for display); search code
normalises them with `mambomeme.corpus.normalise`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path, PurePosixPath
from typing import Any

from mambomeme.corpus.preview_paths import external_path
from mambomeme.errors import SchemaError

SCHEMA_VERSION = "item-v1"

KINDS = ("template", "meme")
SAFETY_CLASSES = ("safe", "unsafe")
# Licence strings that mean "we hold no right to show this": such items are never eligible.
UNLICENSED = frozenset({"", "none", "unlicensed", "unknown"})

# Fields searched lexically, one FTS5 column each, in this order (see index/lexical.py).
SEARCH_FIELDS = (
    "title",
    "aliases",
    "people",
    "template",
    "tags",
    "ocr_text",
    "visual_description",
    "meaning",
    "template_aliases",
    "template_visual",
    "template_meaning",
)
LIST_FIELDS = ("aliases", "people", "tags", "template_aliases")

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:\-]{0,199}$")
_LANGUAGE = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$")  # BCP 47, simplified
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
MAX_TEXT = 20_000
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp")  # absolute preview paths


@dataclass(frozen=True)
class Item:
    """One searchable item. List fields are tuples so items stay hashable and immutable."""

    id: str
    kind: str
    title: str
    aliases: tuple[str, ...]
    people: tuple[str, ...]
    template: str
    template_group: str
    tags: tuple[str, ...]
    ocr_text: str
    visual_description: str
    meaning: str
    language: str
    license: str
    attribution: str
    source_url: str
    preview: str
    published: bool
    available: bool
    safety: str
    image_sha256: str = ""
    template_aliases: tuple[str, ...] = ()
    template_visual: str = ""
    template_meaning: str = ""

    @property
    def licensed(self) -> bool:
        return self.license.strip().lower() not in UNLICENSED

    @property
    def eligible(self) -> bool:
        """The static part of the eligibility mask (filters are applied per request)."""
        return self.published and self.available and self.licensed and self.safety == "safe"

    def to_record(self) -> dict[str, Any]:
        record = asdict(self)
        for name in LIST_FIELDS:
            record[name] = list(record[name])
        return record

    def content_sha256(self) -> str:
        """sha256 of the canonical JSON of every field: changes whenever any field changes."""
        text = json.dumps(self.to_record(), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def field_text(self, name: str) -> str:
        """A search field as one display string (list fields joined with ' ; ')."""
        value = getattr(self, name)
        return " ; ".join(value) if isinstance(value, tuple) else str(value)


_OPTIONAL = {"image_sha256", "template_aliases", "template_visual", "template_meaning"}
REQUIRED = tuple(f.name for f in fields(Item) if f.name not in _OPTIONAL)
ALL_FIELDS = tuple(f.name for f in fields(Item))


def validate_record(raw: Mapping[str, Any], where: str) -> Item:
    """Check one raw record against the schema; `where` (e.g. 'items.jsonl:12') names it."""
    if not isinstance(raw, Mapping):
        raise SchemaError(where, "<record>", f"expected an object, got {type(raw).__name__}")
    unknown = sorted(set(raw) - set(ALL_FIELDS))
    if unknown:
        raise SchemaError(where, unknown[0], "unknown field")
    for name in REQUIRED:
        if name not in raw:
            raise SchemaError(where, name, "missing")
    values: dict[str, Any] = {}
    for name in ALL_FIELDS:
        if name not in raw:
            continue
        value = raw[name]
        if name in LIST_FIELDS:
            values[name] = _string_list(value, where, name)
        elif name in ("published", "available"):
            if not isinstance(value, bool):
                raise SchemaError(where, name, "expected true or false")
            values[name] = value
        else:
            values[name] = _string(value, where, name)
    _check_values(values, where)
    return Item(**values)


def _check_values(values: dict[str, Any], where: str) -> None:
    if not _ID.match(values["id"]):
        raise SchemaError(where, "id", f"invalid id {values['id']!r}")
    if values["kind"] not in KINDS:
        raise SchemaError(where, "kind", f"must be one of {KINDS}, got {values['kind']!r}")
    if values["safety"] not in SAFETY_CLASSES:
        raise SchemaError(where, "safety", f"must be one of {SAFETY_CLASSES}")
    if not _LANGUAGE.match(values["language"]):
        raise SchemaError(where, "language", f"not a BCP 47 tag: {values['language']!r}")
    if not values["title"].strip():
        raise SchemaError(where, "title", "empty")
    if not values["template_group"].strip():
        raise SchemaError(where, "template_group", "empty")
    sha = values.get("image_sha256", "")
    if sha and not _SHA256.match(sha):
        raise SchemaError(where, "image_sha256", "not a lowercase hex sha256")
    _check_preview(values["preview"], where)


def _check_preview(raw: str, where: str) -> None:
    """A preview is "" (no image: a shared corpus that ships none), a relative path inside the
    build folder to the .png card ingest draws, or an absolute path to an existing image file.
    Checked per record so a bad path is a reject naming file:line, not an aborted ingest."""
    if not raw:
        return
    if not raw.strip() or raw != raw.strip():
        raise SchemaError(where, "preview", f"blank or padded preview path {raw!r}")
    posix = PurePosixPath(raw.replace("\\", "/"))
    external = external_path(raw)  # an absolute path or a file:// URI (corpus/preview_paths)
    if external is not None:
        path = Path(external)
        if path.suffix.lower() not in IMAGE_SUFFIXES:
            raise SchemaError(where, "preview", f"not an image file name: {raw!r}")
        if not path.is_file():
            raise SchemaError(where, "preview", f"image file does not exist: {raw!r}")
        return
    if ".." in posix.parts:
        raise SchemaError(where, "preview", f"path escapes the build directory: {raw!r}")
    if posix.suffix.lower() != ".png":
        raise SchemaError(where, "preview", f"generated previews must be .png: {raw!r}")


def _string(value: Any, where: str, name: str) -> str:
    if not isinstance(value, str):
        raise SchemaError(where, name, f"expected a string, got {type(value).__name__}")
    if len(value) > MAX_TEXT:
        raise SchemaError(where, name, f"longer than {MAX_TEXT} characters")
    if "\x00" in value:
        raise SchemaError(where, name, "contains NUL")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise SchemaError(where, name, "not valid UTF-8 (lone surrogate)") from None
    return value


def _string_list(value: Any, where: str, name: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise SchemaError(where, name, f"expected a list of strings, got {type(value).__name__}")
    return tuple(_string(v, f"{where}[{i}]", name) for i, v in enumerate(value))
