"""What reranking the top N costs on this machine, by model depth and max_length (issue 20).

    python scripts/rerank_latency.py --build build/memes-10k \
        --out reports/memes-10k/rerank-latency.json

For each number of kept layers of all-MiniLM-L6-v2 (rerank.layers) the cross-encoder is
exported to ONNX exactly as `train_reranker` exports it (an untrained head: the time does not
depend on the weights), then each query of the corpus's dev benchmark scores the texts of its
`--candidates` hybrid results in one padded ONNX Runtime batch on one thread, tokenising
included, for each max_length. Prints a table of p50 / p95 ms and writes it as JSON.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from mambomeme.bench.floor import machine
from mambomeme.bench.timing import percentiles
from mambomeme.config import load_params
from mambomeme.corpus.manifest import write_json_atomic
from mambomeme.index.dense import model_dir
from mambomeme.index.query_encoder import cpu_session
from mambomeme.models.reranker.features import item_text
from mambomeme.models.reranker.manifest import TOKENIZER_NAME
from mambomeme.models.reranker.model import encode_pairs, pair_tokenizer
from mambomeme.search.engine import Engine


def candidate_texts(build: Path, queries: list[str], top: int) -> list[tuple[str, list[str]]]:
    """Each query with the item texts of its top `top` hybrid results (what serving scores)."""
    engine = Engine.open(build, load_params(build=build))
    engine.load("hybrid")
    out = []
    for query in queries:
        results = engine.search([query], limit=top, system="hybrid").results
        out.append((query, [item_text(engine.items[r.item_id]) for r in results]))
    return out


def export(layers: int, folder: Path) -> bytes:
    import torch
    from sentence_transformers import CrossEncoder

    from mambomeme.models.reranker.train import _export

    torch.manual_seed(0)
    model = CrossEncoder(str(model_dir()), num_labels=1, device="cpu").model
    model.bert.encoder.layer = model.bert.encoder.layer[:layers]
    model.config.num_hidden_layers = layers
    model.eval()
    _export(model, folder)
    return (folder / "model.onnx").read_bytes()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--layers", type=int, nargs="+", default=[6, 3, 2, 1])
    parser.add_argument("--max-length", type=int, nargs="+", default=[128, 64, 48, 32])
    parser.add_argument("--candidates", type=int, default=30)
    parser.add_argument("--queries", type=int, default=60)
    args = parser.parse_args()
    from tokenizers import Tokenizer

    params = load_params(build=args.build)
    bench = Path(params["evaluation"]["benchmark"]) / "queries.jsonl"
    lines = bench.read_text(encoding="utf-8").splitlines()
    queries = [json.loads(line)["text"] for line in lines if line.strip()][: args.queries]
    work = candidate_texts(args.build, queries, args.candidates)
    rows = []
    print(f"{'layers':>6} {'max_length':>10} {'p50 ms':>8} {'p95 ms':>8}")
    for layers in args.layers:
        with tempfile.TemporaryDirectory() as tmp:
            session = cpu_session(export(layers, Path(tmp)), 1)
        for length in args.max_length:
            tokenizer = pair_tokenizer(
                Tokenizer.from_file(str(model_dir() / TOKENIZER_NAME)), length
            )
            samples = []
            for query, texts in [*work[:3], *work]:  # three warm-up calls, then the samples
                started = time.perf_counter()
                session.run(["logits"], encode_pairs(tokenizer, [(query, t) for t in texts]))
                samples.append((time.perf_counter() - started) * 1000)
            found = percentiles(samples[3:])
            rows.append({"layers": layers, "max_length": length, **found})
            print(f"{layers:>6} {length:>10} {found['p50']:>8.1f} {found['p95']:>8.1f}", flush=True)
    report = {
        "build": str(args.build),
        "queries": len(work),
        "candidates": args.candidates,
        "mean_candidates": float(np.mean([len(t) for _, t in work])),
        "threads": 1,
        "machine": machine(),
        "rows": rows,
    }
    write_json_atomic(args.out, report)


if __name__ == "__main__":
    main()
