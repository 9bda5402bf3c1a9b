"""What every source adapter yields: one raw record, or the reason it could not be read."""

from __future__ import annotations

import json
from typing import Any, NamedTuple


class RawRecord(NamedTuple):
    """`where` names the record ("file:line"); exactly one of `record` and `error` is set."""

    where: str
    record: dict[str, Any] | None
    error: str | None


class DuplicateKeyError(ValueError):
    """A JSON object names the same key twice (json.loads would silently keep the last)."""

    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(f"duplicate key {key!r}")


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """`object_pairs_hook` for json.loads: an object, refusing a repeated key."""
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise DuplicateKeyError(key)
        obj[key] = value
    return obj


def parse_json(text: str) -> tuple[Any, str | None]:
    """(value, None), or (None, why it is not one JSON value): invalid JSON (with line and
    column), a repeated key in an object, or nesting too deep for the parser."""
    try:
        return json.loads(text, object_pairs_hook=unique_keys), None
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
    except DuplicateKeyError as exc:
        return None, f"invalid JSON: {exc}"
    except RecursionError:
        return None, "invalid JSON: nested too deeply"
