"""A folder of the user's own meme images, with optional metadata and OCR.

Config: {"source": "folder", "path": DIR, "cache": FILE, "phash_distance": 8,
"license": "local-user-collection", "language": "en", "ocr_language": "eng",
"safety": {...} (optional)}.

- Images: *.jpg, *.jpeg, *.png, *.gif, *.webp under DIR, recursively, in sorted path order.
- Metadata (optional): a sidecar `<image name>.json|.yaml|.yml` or `<image stem>.json|...`
  beside the image, or rows of DIR/metadata.csv (column `file` = path relative to DIR; list
  columns aliases/people/tags separated by ";"). Keys are canonical field names (FIELDS).
  An image with two metadata sources is a reject: which one wins would be a silent choice.
- Text: `ocr_text` from the metadata, else the `tesseract` binary's output (whitespace
  collapsed to single spaces).
- Identity: image_sha256 = sha256 of the file bytes, id = "file:<sha256[:16]>". A second file
  with the same bytes is a named reject (an exact duplicate), never silently skipped.
- Variants: a 64-bit perceptual hash (imagehash.phash). Images whose hashes are within
  `phash_distance` bits (Hamming) are linked, single-linkage, and each connected group is
  named "phash:<16 hex digits of its first image's hash>" (first in sorted path order), so
  grouping is deterministic.
- Incremental: the cache (JSON) keeps, per relative path, size, mtime_ns, sha256, phash and
  the OCR text; a file whose (size, mtime_ns, sha256) match is not OCRed again. The cache is
  rewritten (atomically) after the last record has been yielded.
- An unreadable or corrupt image, bad metadata or an OCR failure is RawRecord(where, None,
  reason) where `where` is the image path relative to DIR.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from PIL import Image, UnidentifiedImageError

from mambomeme.corpus.preview_paths import display_text, preview_of
from mambomeme.corpus.safety import classifier_from_config
from mambomeme.corpus.sources.base import RawRecord
from mambomeme.errors import IngestError, MamboMemeError

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".gif", ".webp")
SIDECAR_SUFFIXES = (".json", ".yaml", ".yml")
FIELDS = (
    "kind",
    "title",
    "aliases",
    "people",
    "template",
    "tags",
    "ocr_text",
    "visual_description",
    "meaning",
    "language",
    "license",
    "attribution",
    "source_url",
    "published",
)
LIST_FIELDS = ("aliases", "people", "tags")
CACHE_VERSION = 1
DEFAULT_PHASH_DISTANCE = 8
DEFAULT_TEMPLATE_DISTANCE = 12


@dataclass(frozen=True)
class Scanned:
    """One readable image: what the cache stores plus its metadata."""

    relative: str
    size: int
    mtime_ns: int
    sha256: str
    phash: str  # 16 hex digits
    ocr: str | None  # tesseract's output, None when the metadata gave the text
    ocr_text: str  # the text used: metadata's ocr_text, else the OCR output
    metadata: dict[str, Any]


def source_files(config: dict[str, Any]) -> list[Path]:
    root = Path(config["path"])
    images = find_images(root)
    extra = [p for p in sorted(root.rglob("*")) if p.is_file() and _is_metadata(p)]
    return sorted(images + extra)


def find_images(root: Path) -> list[Path]:
    if not root.is_dir():
        raise IngestError(f"folder source: {root} is not a folder")
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)


def _is_metadata(path: Path) -> bool:
    return path.name == "metadata.csv" or path.suffix.lower() in SIDECAR_SUFFIXES


def read_records(config: dict[str, Any]) -> Iterator[RawRecord]:
    root = Path(config["path"])
    cache_path = Path(config["cache"]) if config.get("cache") else None
    distance = int(config.get("phash_distance", DEFAULT_PHASH_DISTANCE))
    classifier = classifier_from_config(config)
    cache = load_cache(cache_path)
    table, table_error = read_metadata_csv(root)
    if table_error is not None:
        yield RawRecord("metadata.csv", None, table_error)
    scanned: list[Scanned] = []
    first_by_sha: dict[str, str] = {}
    rejects: dict[str, str] = {}
    for path in find_images(root):
        relative = path.relative_to(root).as_posix()
        result = scan(path, relative, table, cache, str(config.get("ocr_language", "eng")))
        if isinstance(result, str):
            rejects[relative] = result
        elif result.sha256 in first_by_sha:
            rejects[relative] = f"exact duplicate of {first_by_sha[result.sha256]}"
        else:
            first_by_sha[result.sha256] = relative
            scanned.append(result)
    groups = phash_groups([s.phash for s in scanned], distance)
    templates = template_hashes(config)
    template_distance = int(config.get("template_distance", DEFAULT_TEMPLATE_DISTANCE))
    by_path = {s.relative: (s, groups[i]) for i, s in enumerate(scanned)}
    for path in find_images(root):
        relative = path.relative_to(root).as_posix()
        if relative in rejects:
            yield RawRecord(relative, None, rejects[relative])
            continue
        item, group = by_path[relative]
        record = _record(item, group, path, config, classifier)
        if not record["template"]:
            match = nearest_template(item.phash, templates, template_distance)
            if match is not None:  # ingest then joins that template's knowledge by name
                record["template"], record["template_group"] = match, f"tg:{match}"
        yield RawRecord(relative, record, None)
    if cache_path is not None:
        save_cache(cache_path, scanned)


def scan(
    path: Path,
    relative: str,
    table: dict[str, dict[str, Any]],
    cache: dict[str, dict[str, Any]],
    ocr_language: str,
) -> Scanned | str:
    """Hash, fingerprint and (if needed) OCR one image; a string is the reject reason."""
    try:
        data = path.read_bytes()
        stat = path.stat()
    except OSError as exc:
        return f"unreadable file: {exc.strerror}"
    metadata = _metadata_for(path, relative, table)
    if isinstance(metadata, str):
        return metadata
    sha = hashlib.sha256(data).hexdigest()
    cached = cache.get(relative) or {}
    key = (stat.st_size, stat.st_mtime_ns, sha)
    if (cached.get("size"), cached.get("mtime_ns"), cached.get("sha256")) == key:
        phash, ocr = str(cached["phash"]), cached.get("ocr")
    else:
        try:
            phash, ocr = perceptual_hash(path), None
        except (OSError, UnidentifiedImageError, ValueError, SyntaxError) as exc:
            return f"unreadable image: {type(exc).__name__}: {exc}"
    given = metadata.get("ocr_text")
    if not isinstance(given, str) and not isinstance(ocr, str):
        try:
            ocr = ocr_image(path, ocr_language)
        except IngestError as exc:
            return str(exc)
    text = given if isinstance(given, str) else str(ocr)
    return Scanned(relative, stat.st_size, stat.st_mtime_ns, sha, phash, ocr, text, metadata)


def template_hashes(config: dict[str, Any]) -> dict[str, str]:
    """Perceptual hashes of known template images: config `template_images` is a folder whose
    image files are named after their template ("Disaster Girl.jpg"), e.g. blank templates the
    user has locally. Empty when not configured."""
    folder = config.get("template_images")
    if not folder:
        return {}
    return {path.stem: perceptual_hash(path) for path in find_images(Path(folder))}


def nearest_template(phash: str, templates: dict[str, str], distance: int) -> str | None:
    """The template whose image hash is nearest to `phash`, if within `distance` bits
    (ties by name); a captioned meme keeps most of its template's low-frequency structure."""
    value = int(phash, 16)
    best = sorted((bin(value ^ int(h, 16)).count("1"), name) for name, h in templates.items())
    return best[0][1] if best and best[0][0] <= distance else None


def perceptual_hash(path: Path) -> str:
    """imagehash.phash (DCT of a 32x32 greyscale, 8x8 low frequencies vs their median)."""
    import imagehash  # imported here: only the folder source needs it

    with Image.open(path) as image:
        image.load()
        return str(imagehash.phash(image.convert("RGB")))


def ocr_image(path: Path, language: str = "eng") -> str:
    """Run `tesseract <image> stdout`; text lines joined with single spaces."""
    binary = shutil.which("tesseract")
    if binary is None:
        raise IngestError(
            "folder source: OCR needs the tesseract binary (apt-get install tesseract-ocr)"
        )
    return run_tesseract(
        [binary, str(path), "stdout", "-l", language], None, path.name, IngestError
    )


def run_tesseract(
    argv: Sequence[str], stdin: bytes | None, name: str, error: type[MamboMemeError]
) -> str:
    """Run a tesseract command line (`stdin`: the image bytes when argv reads "stdin"); its
    text with lines joined by single spaces. A timeout or a failure raises `error` naming the
    image `name` (the folder source and the library's OCR share this)."""
    try:
        done = subprocess.run(
            list(argv), input=stdin, capture_output=True, timeout=120, check=False
        )
    except subprocess.TimeoutExpired:
        raise error(f"tesseract timed out on {name}") from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise error(f"tesseract failed on {name}: {message[-1] if message else done.returncode}")
    return " ".join(done.stdout.decode("utf-8", "replace").split())


def phash_groups(hashes: list[str], distance: int) -> list[str]:
    """Single-linkage groups of hashes within `distance` bits, named by the first member."""
    count = len(hashes)
    values = np.array([int(h, 16) for h in hashes], dtype=np.uint64)
    parent = list(range(count))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(count - 1):
        near = np.nonzero(np.bitwise_count(values[i + 1 :] ^ values[i]) <= distance)[0]
        for j in near:
            a, b = find(i), find(i + 1 + int(j))
            parent[max(a, b)] = min(a, b)  # the root is always the earliest member
    return [f"phash:{hashes[find(i)]}" for i in range(count)]


def read_metadata_csv(root: Path) -> tuple[dict[str, dict[str, Any]], str | None]:
    path = root / "metadata.csv"
    if not path.exists():
        return {}, None
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        return {}, f"invalid UTF-8 at byte {exc.start}"
    reader = csv.DictReader(text.splitlines())
    try:
        return _metadata_table(reader)
    except csv.Error as exc:  # a field over csv's 128 KiB limit, a NUL...
        return {}, f"line {reader.line_num}: malformed CSV row: {exc}"


def _metadata_table(reader: csv.DictReader[str]) -> tuple[dict[str, dict[str, Any]], str | None]:
    columns = reader.fieldnames or []
    if "file" not in columns:
        return {}, "missing column 'file'"
    unknown = [c for c in columns if c != "file" and c not in FIELDS]
    if unknown:
        return {}, f"unknown column {unknown[0]!r}"
    table: dict[str, dict[str, Any]] = {}
    for number, row in enumerate(reader, start=2):
        name = (row.get("file") or "").strip()
        if not name or name in table:
            return {}, f"line {number}: empty or repeated file {name!r}"
        entry: dict[str, Any] = {}
        for key, value in row.items():
            if key == "file" or value is None or value == "":
                continue
            if key in LIST_FIELDS:
                entry[key] = [v.strip() for v in value.split(";") if v.strip()]
            elif key == "published":
                entry[key] = value.strip().lower() in ("true", "1", "yes")
            else:
                entry[key] = value
        table[name] = entry
    return table, None


def _metadata_for(
    path: Path, relative: str, table: dict[str, dict[str, Any]]
) -> dict[str, Any] | str:
    names = {path.name + s for s in SIDECAR_SUFFIXES} | {path.stem + s for s in SIDECAR_SUFFIXES}
    sidecars = sorted(p for p in (path.parent / n for n in names) if p.is_file())
    sources = len(sidecars) + (relative in table)
    if sources > 1:
        return "more than one metadata source (sidecars or metadata.csv row)"
    if relative in table:
        return table[relative]
    if not sidecars:
        return {}
    sidecar = sidecars[0]
    try:
        loaded = yaml.safe_load(sidecar.read_bytes().decode("utf-8"))  # YAML reads JSON too
    except UnicodeDecodeError as exc:
        return f"{sidecar.name}: invalid UTF-8 at byte {exc.start}"
    except yaml.YAMLError as exc:
        return f"{sidecar.name}: invalid metadata: {str(exc).splitlines()[0]}"
    if not isinstance(loaded, dict):
        return f"{sidecar.name}: metadata is not a mapping"
    unknown = sorted(k for k in loaded if k not in FIELDS)
    if unknown:
        return f"{sidecar.name}: unknown field {unknown[0]!r}"
    return loaded


def _title_from_name(relative: str) -> str:
    stem = Path(relative).stem
    return " ".join(re.split(r"[-_\s]+", stem)).strip() or stem


def _record(
    item: Scanned, group: str, path: Path, config: dict[str, Any], classifier: Any
) -> dict[str, Any]:
    meta = item.metadata
    item_id = f"file:{item.sha256[:16]}"
    title = meta.get("title") or display_text(_title_from_name(item.relative))
    record: dict[str, Any] = {
        "id": item_id,
        "kind": "meme",
        "title": title,
        "aliases": [],
        "people": [],
        "template": "",
        "template_group": group,
        "tags": [],
        "ocr_text": item.ocr_text,
        "visual_description": "",
        "meaning": "",
        "language": config.get("language", "en"),
        "license": config.get("license", "local-user-collection"),
        "attribution": "",
        "source_url": "",
        "preview": preview_of(str(path.resolve())),
        "published": True,
        "available": True,
        "image_sha256": item.sha256,
    }
    record.update({k: v for k, v in meta.items() if k in FIELDS})  # validate_record checks types
    record["safety"] = classifier.classify(
        str(record["title"]),
        str(record["ocr_text"]),
        str(record["meaning"]),
        str(record["visual_description"]),
        item_id,
    ).safety
    return record


def load_cache(path: Path | None) -> dict[str, dict[str, Any]]:
    """The cache's entries by relative path; a missing or unreadable cache is empty (it
    only saves work, so starting over is correct)."""
    if path is None or not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION:
        return {}
    entries = data.get("entries")
    return entries if isinstance(entries, dict) else {}


def save_cache(path: Path, scanned: list[Scanned]) -> None:
    entries = {
        s.relative: {
            "size": s.size,
            "mtime_ns": s.mtime_ns,
            "sha256": s.sha256,
            "phash": s.phash,
            "ocr": s.ocr,
        }
        for s in scanned
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps({"version": CACHE_VERSION, "entries": entries}, indent=1))
    os.replace(temporary, path)
