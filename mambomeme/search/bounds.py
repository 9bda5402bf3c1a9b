"""Request bounds, checked before any storage or model work; a violation names its bound."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mambomeme.errors import BoundError
from mambomeme.search.results import Filters

KINDS = ("template", "meme")


@dataclass(frozen=True)
class Bounds:
    max_cues: int = 8
    max_cue_bytes: int = 1000
    max_limit: int = 100
    max_filter_bytes: int = 200

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Bounds:
        return cls(**{k: int(v) for k, v in params.items()})


def check_request(
    bounds: Bounds,
    cues: Sequence[str],
    limit: int,
    filters: Filters | None,
    system: object = "hybrid",
) -> None:
    """Raise BoundError('<bound>') for the first bound the request breaks.

    Every string must be valid UTF-8 text: a lone surrogate (what Python makes of invalid bytes
    in argv) is refused here, so nothing downstream (Arrow, SQLite, JSON output) meets one."""
    if not isinstance(system, str) or not system:
        raise BoundError("system", f"must be a system name, got {system!r}")
    if isinstance(cues, str) or not isinstance(cues, Sequence):
        raise BoundError("cues", "expected a list of cue strings")
    if len(cues) > bounds.max_cues:
        raise BoundError("max_cues", f"{len(cues)} cues given, at most {bounds.max_cues}")
    for i, cue in enumerate(cues):
        if not isinstance(cue, str):
            raise BoundError("cues", f"cue {i} is not a string")
        size = len(cue.encode("utf-8", "surrogatepass"))
        if size > bounds.max_cue_bytes:
            raise BoundError(
                "max_cue_bytes", f"cue {i} is {size} UTF-8 bytes, at most {bounds.max_cue_bytes}"
            )
        _check_text("cues", f"cue {i}", cue, allow_nul=True)  # a NUL is just not a word
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise BoundError("limit", f"limit must be a positive integer, got {limit!r}")
    if limit > bounds.max_limit:
        raise BoundError("max_limit", f"limit {limit} exceeds {bounds.max_limit}")
    if filters is None:
        return
    if not isinstance(filters, Filters):
        raise BoundError("filters", f"expected Filters, got {type(filters).__name__}")
    for name in ("kind", "language", "template"):
        value = getattr(filters, name)
        if value is None:
            continue
        if not isinstance(value, str):
            raise BoundError(f"filter.{name}", "must be a string")
        if len(value.encode("utf-8", "surrogatepass")) > bounds.max_filter_bytes:
            raise BoundError(
                "max_filter_bytes", f"filter {name} exceeds {bounds.max_filter_bytes} bytes"
            )
        _check_text(f"filter.{name}", f"filter {name}", value)
        if not value.strip():
            raise BoundError(f"filter.{name}", "must not be empty (leave it out for any)")
    if filters.kind is not None and filters.kind not in KINDS:
        raise BoundError("filter.kind", f"must be one of {KINDS}, got {filters.kind!r}")


def _check_text(bound: str, what: str, value: str, allow_nul: bool = False) -> None:
    """Refuse a string that is not valid UTF-8 text (a lone surrogate) or (unless allowed)
    holds a NUL."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BoundError(
            bound, f"{what} is not valid UTF-8 (invalid byte or lone surrogate at {exc.start})"
        ) from None
    if not allow_nul and "\x00" in value:
        raise BoundError(bound, f"{what} contains a NUL character")
