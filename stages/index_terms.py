"""DVC stage index_terms: lexical.sqlite -> term-lists/ (every token's bm25 list, precomputed)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run, stage_params  # noqa: E402

from mambomeme.config import corpus_config  # noqa: E402
from mambomeme.index.term_lists import TERM_LISTS_DIR, build_term_lists  # noqa: E402


def main() -> None:
    params = stage_params(__doc__.splitlines()[0])
    corpus, _ = corpus_config(params)
    build = Path("build") / corpus
    info = build_term_lists(build / "lexical.sqlite", build / TERM_LISTS_DIR)
    print(
        f"index_terms {corpus}: {info['terms']} terms, {info['postings']} postings "
        f"in {info['build_seconds']} s"
    )


if __name__ == "__main__":
    run(main)
