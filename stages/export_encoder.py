"""DVC stage export_encoder: the dense model exported to ONNX for query encoding.

Writes build/<corpus>/query-encoder/ (model.onnx, tokenizer.json, manifest.json). The model does
not depend on the corpus; the folder sits in the build so a release carries it. `--build DIR`
exports into DIR/query-encoder instead (e.g. a build made outside dvc repro).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import add_corpus_argument, run  # noqa: E402

from mambomeme.config import build_dir, load_params  # noqa: E402
from mambomeme.index.query_encoder import QUERY_ENCODER_DIR, export_query_encoder  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, help="build directory (default build/<corpus>)")
    add_corpus_argument(parser)
    args = parser.parse_args()
    folder = (args.build or build_dir(load_params(corpus=args.corpus))) / QUERY_ENCODER_DIR
    start = time.perf_counter()
    manifest = export_query_encoder(folder)
    probe = manifest["probe"]
    print(
        f"export_encoder: {folder} ({manifest['onnx_bytes'] / 2**20:.1f} MiB, opset "
        f"{manifest['opset']}) in {time.perf_counter() - start:.1f} s; vs torch on "
        f"{probe['sentences']} probes: min cosine {probe['min_cosine']:.7f}, max |diff| "
        f"{probe['max_abs_difference']:.2e}"
    )


if __name__ == "__main__":
    run(main)
