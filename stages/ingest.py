"""DVC stage ingest: corpus source (params corpora.<base.corpus>) -> items.parquet + manifest."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run, stage_params  # noqa: E402

from mambomeme.config import corpus_config  # noqa: E402
from mambomeme.corpus.ingest import ingest  # noqa: E402
from mambomeme.moderation.apply import model_reclassifier  # noqa: E402


def main() -> None:
    params = stage_params(__doc__.splitlines()[0])
    corpus, config = corpus_config(params)
    # strict by default and always in CI; a corpus may opt out (memes-full has one named
    # reject, listed in its manifest)
    lenient = corpus in params["ingest"].get("lenient", [])
    strict = (bool(params["ingest"]["strict"]) and not lenient) or os.environ.get("CI") == "true"
    result = ingest(
        corpus,
        config,
        Path("build") / corpus,
        Path("manifests") / f"corpus-{corpus}.json",
        strict,
        Path(params["ingest"]["knowledge"]),
        model_reclassifier(params, config),
    )
    counts = result.manifest["counts"]
    print(
        f"ingest {corpus}: {counts['input']} records = {counts['accepted']} accepted "
        f"+ {counts['rejected']} rejected; {counts['eligible']} eligible"
    )
    model = result.manifest["safety_model"]
    if model["applied"]:
        print(f"  safety model: {model['flagged_by_model']} more item(s) unsafe")
    for reject in result.rejects[:50]:
        print(f"  reject {reject}")


if __name__ == "__main__":
    run(main)
