"""DVC stage index_dense: items.parquet -> dense*.npy + ids + embedding manifests."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run, stage_params  # noqa: E402

from mambomeme.config import DenseBuildParams, corpus_config  # noqa: E402
from mambomeme.index.build import build_dense_indexes  # noqa: E402
from mambomeme.index.executor import ExecutorConfig  # noqa: E402


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    params = stage_params(__doc__.splitlines()[0])
    corpus, config = corpus_config(params)
    dense = DenseBuildParams.from_params(params, config)
    executor = ExecutorConfig.from_params(params.get("build", {}))
    start = time.perf_counter()
    built = build_dense_indexes(
        Path("build") / corpus,
        Path("manifests") / f"corpus-{corpus}.json",
        dense.batch_size,
        dense.device,
        dense.ablations,
        dense.memes_without,
        dense.max_seq_length,
        dense.cache_dir,
        dense.shard_size,
        dense.document_encoder,
        executor,
    )
    seconds = time.perf_counter() - start
    vectors = sum(m["embedded_now"] for m in built)
    reused = sum(1 for m in built if m["reused"])
    print(
        f"index_dense {corpus}: {len(built)} matrices ({reused} reused: same documents), "
        f"{vectors} vectors embedded in {seconds:.1f} s "
        f"({vectors / seconds:.0f} docs/s on {dense.device}, "
        f"{dense.document_encoder}, {executor.kind})"
    )


if __name__ == "__main__":
    run(main)
