"""`mambomeme feedback export`: the events in the window as a new JSON-lines file (0600)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from mambomeme.feedback.events import ExportError, LoggedEvent

# ----- export -------------------------------------------------------------------------------


def ensure_new(out: Path) -> None:
    """Refuse a target that exists: an export never overwrites anything."""
    if out.exists() or out.is_symlink():
        raise ExportError(f"{out}: already exists; the export never overwrites a file")


def write_export(events: Sequence[LoggedEvent], out: Path, with_queries: bool) -> int:
    """Write the events as JSON lines to a new file `out` (0600); query text only if asked.

    Only the logger's known fields are written. Returns the number of events written.
    """
    ensure_new(out)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(out, flags, 0o600)
    except FileExistsError as exc:
        raise ExportError(f"{out}: already exists; the export never overwrites a file") from exc
    except OSError as exc:
        raise ExportError(f"{out}: cannot create the export: {exc}") from exc
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        for event in events:
            record = event.to_record(with_queries)
            handle.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
    return len(events)
