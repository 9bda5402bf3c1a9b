"""A query as the user types it -> its alternate cues (the CLI, the TUI and runs agree)."""

from __future__ import annotations


def parse_cues(text: str) -> tuple[str, ...]:
    """Alternate cues are separated by '|'; each is stripped and blank ones are dropped."""
    return tuple(c for c in (part.strip() for part in text.split("|")) if c)
