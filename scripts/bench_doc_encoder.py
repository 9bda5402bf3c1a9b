"""Document encoding for the build (issue 36, point 2): torch vs the ONNX export, documents per
second and agreement (cosine per document), on a seeded sample of a build's items.

    python scripts/bench_doc_encoder.py --build build/memes-10k [--sample 2000] [--batch-size 64]
        [--onnx-dir build/memes-10k/query-encoder] [--threads 0] [--seed 13]

Both encoders embed the same documents (dense.document of each sampled item, or every item when
the build has fewer) in the same batches (document_encoder.batch_slices), one after the other,
each timed once after a one-batch warm-up; `--threads` 0 = each library's default (one thread
per core). Prints docs/s for each, the ratio, min / mean cosine, and the load average.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mambomeme.corpus.ingest import load_items  # noqa: E402
from mambomeme.index.dense import document  # noqa: E402
from mambomeme.index.document_encoder import EncoderSpec  # noqa: E402
from mambomeme.index.executor import embed_in_process  # noqa: E402
from mambomeme.index.query_encoder import QUERY_ENCODER_DIR  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, required=True)
    parser.add_argument("--onnx-dir", type=Path)
    parser.add_argument("--sample", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args()
    items = load_items(args.build)
    rng = np.random.default_rng(args.seed)
    picked = sorted(rng.choice(len(items), min(args.sample, len(items)), replace=False))
    docs = [document(items[int(i)]) for i in picked]
    onnx_dir = args.onnx_dir or args.build / QUERY_ENCODER_DIR
    specs = {
        "torch": EncoderSpec("torch", threads=args.threads),
        "onnx": EncoderSpec("onnx", onnx_dir=str(onnx_dir), threads=args.threads),
    }
    threads = args.threads or "default"
    print(
        f"{args.build}: {len(docs)} documents, batch {args.batch_size}, threads {threads}, "
        f"cores {os.cpu_count()}, load {os.getloadavg()}"
    )
    vectors = {}
    for name, spec in specs.items():
        encoder = spec.open()
        embed_in_process(docs[: args.batch_size], args.batch_size, encoder)  # warm-up
        start = time.perf_counter()
        vectors[name] = embed_in_process(docs, args.batch_size, encoder)
        seconds = time.perf_counter() - start
        print(f"  {name:<6} {len(docs) / seconds:8.1f} docs/s ({seconds:.1f} s)", flush=True)
    cosine = (vectors["onnx"].astype(np.float64) * vectors["torch"].astype(np.float64)).sum(1)
    print(f"  cosine onnx vs torch: min {cosine.min():.7f} mean {cosine.mean():.7f}")
    print(f"  load average at end {os.getloadavg()}")


if __name__ == "__main__":
    main()
