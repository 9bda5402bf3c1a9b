"""DVC stage index_lexical: items.parquet -> lexical.sqlite (FTS5, one column per field)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run, stage_params  # noqa: E402

from mambomeme.config import LexicalParams, corpus_config  # noqa: E402
from mambomeme.index.build import build_lexical_index  # noqa: E402


def main() -> None:
    params = stage_params(__doc__.splitlines()[0])
    corpus, _ = corpus_config(params)
    info = build_lexical_index(
        Path("build") / corpus,
        Path("manifests") / f"corpus-{corpus}.json",
        LexicalParams.from_params(params["lexical"]).weights,
    )
    print(f"index_lexical {corpus}: {info['count']} items")


if __name__ == "__main__":
    run(main)
