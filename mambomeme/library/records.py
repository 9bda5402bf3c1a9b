"""Corpus records from the library's state store, by the folder source's rules.

Every file the scan read (library/state.py) becomes one record as corpus/sources/folder.py makes
them: id "file:<sha256[:16]>", title from the file name unless the metadata names one, the
metadata's fields, the OCR text, the absolute image path as preview, the rule-based safety
label; perceptual-hash variant groups across the whole library; a meme whose hash is near a
known template's (library/template_hashes.py) is linked to that template by name, so ingest
joins its knowledge. A file the scan skipped, or a second file with the same bytes, is a named
reject (path, reason).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mambomeme.corpus.safety import classifier_from_config
from mambomeme.corpus.sources import folder
from mambomeme.library.state import StateStore
from mambomeme.library.template_hashes import TEMPLATE_PHASHES


@dataclass(frozen=True)
class Records:
    records: tuple[dict[str, Any], ...]  # in path order
    rejects: tuple[tuple[str, str], ...]  # (path, reason)


def library_records(store: StateStore, config: dict[str, Any]) -> Records:
    """Records and rejects of everything in `store`; `config` as the folder source's
    (phash_distance, template_distance, safety)."""
    classifier = classifier_from_config(config)
    distance = int(config.get("phash_distance", folder.DEFAULT_PHASH_DISTANCE))
    near = int(config.get("template_distance", folder.DEFAULT_TEMPLATE_DISTANCE))
    rejects = [(p, str(row.error)) for p, row in store.files().items() if row.error is not None]
    first: dict[str, str] = {}
    kept: list[folder.Scanned] = []
    for file, image in store.indexed():
        if image.sha256 in first:
            rejects.append((file.path, f"exact duplicate of {first[image.sha256]}"))
            continue
        first[image.sha256] = file.path
        given = file.metadata.get("ocr_text")
        text = given if isinstance(given, str) else (image.ocr_text or "")
        kept.append(
            folder.Scanned(
                file.path, file.size, file.mtime_ns, image.sha256, image.phash,
                image.ocr_text, text, file.metadata,
            )
        )  # fmt: skip
    groups = folder.phash_groups([s.phash for s in kept], distance) if kept else []
    records = []
    for scanned, group in zip(kept, groups, strict=True):
        # folder's record builder (private there; this is its second caller)
        record = folder._record(scanned, group, Path(scanned.relative), config, classifier)
        if not record["template"]:
            match = folder.nearest_template(scanned.phash, TEMPLATE_PHASHES, near)
            if match is not None:
                record["template"], record["template_group"] = match, f"tg:{match}"
        records.append(record)
    return Records(tuple(records), tuple(sorted(rejects)))
