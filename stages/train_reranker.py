"""DVC stage train_reranker: the cross-encoder reranker fine-tuned on dev judgements.

    python stages/train_reranker.py --corpus NAME

Reads the items of build/NAME (the judged pairs name them), the judgement set and the template
knowledge named by params `rerank` (with the corpus's own `corpora.NAME.rerank` entries over
them) and writes build/NAME/reranker (model.onnx, tokenizer.json, manifest.json), where the
engine's `+rerank` systems find it. The fixture trains a tiny model from its own judgements;
memes-10k trains on dev-v1 with dev-v2's families held out. `--build DIR` reads another build's
items; `--out DIR` writes elsewhere.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import add_corpus_argument, run  # noqa: E402

from mambomeme.config import build_dir, corpus_config, load_params  # noqa: E402
from mambomeme.evaluation.benchmark import read_queries  # noqa: E402
from mambomeme.models.reranker.data import build_training_set, own_families, sample  # noqa: E402
from mambomeme.models.reranker.manifest import RERANKER_DIR  # noqa: E402
from mambomeme.models.reranker.train import HyperParameters, train_reranker  # noqa: E402
from mambomeme.search.items import ItemTable  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, help="build with the items (default build/<corpus>)")
    parser.add_argument("--out", type=Path, help="model folder (default <build>/reranker)")
    add_corpus_argument(parser)
    args = parser.parse_args()
    params = load_params(corpus=args.corpus)
    _, config = corpus_config(params)
    rerank = params["rerank"]
    build = args.build or build_dir(params)
    items = ItemTable(build)
    extra: set[str] = set()
    if config["source"] == "fixture":  # the fixture's families are its own, not in families.csv
        queries = read_queries(Path(rerank["benchmark"]) / "queries.jsonl")
        extra = own_families(items.values(), queries)
    found = build_training_set(items, rerank, extra, build)
    if rerank.get("sample"):  # a seeded subset (the fixture's tiny model)
        size = rerank["sample"]
        found = sample(
            found, int(size["train_pairs"]), int(size["validation_queries"]), int(rerank["seed"])
        )
    pairs = found.data["pairs"]
    print(f"train_reranker: {len(found.train)} train / {len(found.validation)} validation {pairs}")
    out = args.out or build / RERANKER_DIR
    manifest = train_reranker(
        found.train, found.validation, HyperParameters.from_params(rerank), out, found.data
    )
    best = manifest["validation"]["epochs"][manifest["validation"]["best_epoch"] - 1]
    print(
        f"train_reranker: {out} in {manifest['training']['seconds']:.0f} s; validation nDCG@10 "
        f"{best.get('ndcg10_all')}; ONNX vs torch: r = {manifest['probe']['correlation']:.6f}"
    )


if __name__ == "__main__":
    run(main)
