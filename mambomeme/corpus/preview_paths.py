"""Previews that name an image file anywhere on disk, whatever bytes its name is made of.

A record's `preview` is text (items.parquet holds UTF-8), but a POSIX file name is bytes: a
name that is not UTF-8 (a Latin-1 `caf\\xe9.png` from an old camera or archive) reaches Python
as a str with lone surrogates (os.fsdecode's surrogateescape), which no UTF-8 writer accepts.
Such a path is stored as a `file://` URI whose invalid bytes are percent-encoded (RFC 8089, as
file managers do); every other path is stored as it is. `external_path` gives the file system
path back (os.fsencode of it is the exact bytes on disk); a relative preview (a card ingest
draws inside the build) is not external.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import quote_from_bytes, unquote_to_bytes

FILE_URI = "file://"


def preview_of(path: str) -> str:
    """The text stored as the preview of the image at absolute `path` (a str from the file
    system, possibly with surrogate escapes)."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return FILE_URI + quote_from_bytes(os.fsencode(path), safe="/")
    return path


def external_path(preview: str) -> str | None:
    """The file system path (surrogate-escaped str) of a preview that names an existing image
    anywhere on disk, or None for a relative preview (or none)."""
    if preview.startswith(FILE_URI + "/"):
        return os.fsdecode(unquote_to_bytes(preview[len(FILE_URI) :]))
    if preview.startswith("/") or Path(preview).is_absolute():
        return preview
    return None


_SURROGATE = re.compile("[\ud800-\udfff]")


def display_text(text: str) -> str:
    """`text` with every surrogate (an undecodable byte of a file name) replaced by U+FFFD, so
    it can be stored and printed as UTF-8 (titles made from file names)."""
    return _SURROGATE.sub("\ufffd", text)
