"""The versioned text normaliser shared by corpus fields and queries.

Version 1: Unicode NFKC, then every run of whitespace (including control characters that
Unicode treats as separators) collapsed to one space, stripped at both ends. Lone surrogates
(which cannot be encoded as UTF-8) are replaced by U+FFFD so the result is always valid text.
Original strings are kept separately for display; only search uses the normalised form.
"""

from __future__ import annotations

import re
import unicodedata

NORMALISER_VERSION = "nfkc-ws-1"

_WHITESPACE = re.compile(r"[\s\x00-\x1f\x7f]+")
_SURROGATE = re.compile("[\ud800-\udfff]")


def normalise(text: str) -> str:
    """Return `text` in NFKC with whitespace collapsed; idempotent."""
    safe = _replace_surrogates(text)
    folded = unicodedata.normalize("NFKC", safe)
    return _WHITESPACE.sub(" ", folded).strip()


def _replace_surrogates(text: str) -> str:
    return _SURROGATE.sub("\ufffd", text)
