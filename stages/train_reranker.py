"""DVC stage train_reranker: the cross-encoder reranker fine-tuned on dev judgements.

Reads the items of build/<rerank.corpus> (the judged pairs name them), the dev-v1 judgement
set and the template knowledge (params `rerank`), writes rerank.out (model.onnx,
tokenizer.json, manifest.json). `--build DIR` reads another build's items (read by path);
`--out DIR` writes elsewhere.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run  # noqa: E402

from mambomeme.config import build_dir, load_params  # noqa: E402
from mambomeme.rerank.data import build_training_set  # noqa: E402
from mambomeme.rerank.train import HyperParameters, train_reranker  # noqa: E402
from mambomeme.search.items import ItemTable  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, help="build with the items (default build/<corpus>)")
    parser.add_argument("--out", type=Path, help="model folder (default params rerank.out)")
    args = parser.parse_args()
    params = load_params()
    rerank = params["rerank"]
    items = ItemTable(args.build or build_dir(params, str(rerank["corpus"])))
    found = build_training_set(items, rerank)
    pairs = found.data["pairs"]
    print(f"train_reranker: {len(found.train)} train / {len(found.validation)} validation {pairs}")
    out = args.out or Path(rerank["out"])
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
