"""Shared by the stage scripts: params loading and error-to-exit-code handling."""

from __future__ import annotations

import sys
from collections.abc import Callable

from mambomeme.errors import MamboMemeError


def run(main: Callable[[], None]) -> None:
    try:
        main()
    except MamboMemeError as exc:
        print(f"stage failed: {exc}", file=sys.stderr)
        sys.exit(1)
