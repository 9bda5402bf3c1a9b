"""What every source adapter yields: one raw record, or the reason it could not be read."""

from __future__ import annotations

from typing import Any, NamedTuple


class RawRecord(NamedTuple):
    """`where` names the record ("file:line"); exactly one of `record` and `error` is set."""

    where: str
    record: dict[str, Any] | None
    error: str | None
