"""Shared by the stage scripts: the corpus's params view and error-to-exit-code handling."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from mambomeme.config import load_params
from mambomeme.errors import MamboMemeError


def add_corpus_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--corpus", help="the pipeline's corpus, an entry of params corpora (default base.corpus)"
    )


def stage_params(description: str) -> dict[str, Any]:
    """params.yaml as the pipeline of `--corpus NAME` sees it (for stages with no other flag)."""
    parser = argparse.ArgumentParser(description=description)
    add_corpus_argument(parser)
    return load_params(corpus=parser.parse_args().corpus)


def run(main: Callable[[], None]) -> None:
    """Run a stage's `main`; a library error exits with its class's code, as from the CLI
    (`MamboMemeError.exit_code`, docs/CONTRACTS.md "Exit statuses")."""
    try:
        main()
    except MamboMemeError as exc:
        print(f"stage failed: {exc.kind}: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
