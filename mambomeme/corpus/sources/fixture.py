"""The project's own fixture corpus: one JSON object per line, every canonical field present."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mambomeme.corpus.sources.base import RawRecord, parse_json


def items_file(config: dict[str, Any]) -> Path:
    """The fixture folder holds items.jsonl (and its README); a file path is accepted too."""
    path = Path(config["path"])
    return path / "items.jsonl" if path.is_dir() else path


def read_records(config: dict[str, Any]) -> Iterator[RawRecord]:
    path = items_file(config)
    with path.open("rb") as handle:
        for number, raw_line in enumerate(handle, start=1):
            where = f"{path.name}:{number}"
            if not raw_line.strip():
                continue
            try:
                line = raw_line.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield RawRecord(where, None, f"invalid UTF-8 at byte {exc.start}")
                continue
            record, error = parse_json(line)  # repeated keys and deep nesting are rejects too
            if error is not None:
                yield RawRecord(where, None, error)
                continue
            if not isinstance(record, dict):
                yield RawRecord(where, None, "not a JSON object")
                continue
            if record.get("preview") == "":  # the fixture ships no images: each gets a card
                yield RawRecord(where, None, "field preview: empty path (needs previews/<id>.png)")
                continue
            yield RawRecord(where, record, None)


def source_files(config: dict[str, Any]) -> list[Path]:
    """Files whose sha256 the manifest records."""
    return [items_file(config)]
