"""The build's three map steps in-process and on a local Ray (issue 36, point 3): wall time of
each, the Ray run's start-up and actors' model loading included, and whether the outputs are
equal byte for byte.

    python scripts/bench_ray_map.py [--steps embed,safety,ocr] [--cpus 2] [--actors 2]
        [--safety-model build/safety-model] [--images 8] [--batch-size 16]

embed: the fixture's dense documents (index/executor.py); safety: the learned safety model
over the fixture's items (moderation/apply.py, its signals included; skipped without a model);
ocr: `--images` generated memes scanned into an empty library state (library/scan.py, rapidocr).
Each step runs in-process first, then on a local Ray with `--cpus` CPUs that the step starts
and stops itself, as a stage would. Prints one line per step and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mambomeme.corpus.schema import Item, validate_record  # noqa: E402
from mambomeme.index.ray_map import IN_PROCESS, ExecutorConfig  # noqa: E402


def timed(run: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    out = run()
    return time.perf_counter() - started, out


def fixture_items() -> list[Item]:
    rows = [json.loads(line) for line in (ROOT / "fixture" / "items.jsonl").open()]
    return [validate_record(r, f"items.jsonl:{n}") for n, r in enumerate(rows, 1)]


def embed_step(executor: ExecutorConfig, batch_size: int) -> bytes:
    from mambomeme.index.dense import document
    from mambomeme.index.document_encoder import EncoderSpec
    from mambomeme.index.executor import embedder

    docs = [document(item) for item in fixture_items()]
    matrix = embedder(EncoderSpec("torch"), executor)(docs, batch_size)
    return bytes(matrix.tobytes())


def safety_step(executor: ExecutorConfig, batch_size: int, model: Path) -> Any:
    from mambomeme.moderation.apply import model_reclassifier

    params: dict[str, Any] = {
        "ingest": {"safety": {"model": str(model)}, "knowledge": str(ROOT / "knowledge")},
        "dense": {"cache_dir": "", "batch_size": batch_size, "device": "cpu", "shard_size": 8192},
        "build": executor.as_params(),
    }
    reclassify = model_reclassifier(params, {"safety": {}})
    assert reclassify is not None
    result = reclassify(fixture_items())
    return (result.items, result.probabilities)


def ocr_step(executor: ExecutorConfig, folder: Path, state: Path) -> Any:
    from mambomeme.library.ocr import open_engine
    from mambomeme.library.scan import scan_folders
    from mambomeme.library.state import StateStore

    with StateStore(state) as store:
        report = scan_folders(store, [str(folder)], open_engine("rapidocr"), False, None, executor)
        return (report, list(store.indexed()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", default="embed,safety,ocr")
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--actors", type=int, default=2)
    parser.add_argument("--safety-model", type=Path, default=ROOT / "build" / "safety-model")
    parser.add_argument("--images", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args()
    on_ray = ExecutorConfig("ray", ray_cpus=args.cpus, ray_actors=args.actors)
    scratch = Path(tempfile.mkdtemp(prefix="bench-ray-map-"))
    steps: dict[str, Callable[[ExecutorConfig, str], Any]] = {
        "embed": lambda e, _: embed_step(e, args.batch_size),
        "safety": lambda e, _: safety_step(e, args.batch_size, args.safety_model),
        "ocr": lambda e, name: ocr_step(e, scratch / "memes", scratch / f"{name}.sqlite"),
    }
    if "ocr" in args.steps:
        from mambomeme.library.synthetic import CAPTIONS, write_memes

        write_memes(scratch / "memes", CAPTIONS[: args.images])
    for name in args.steps.split(","):
        if name == "safety" and not (args.safety_model / "manifest.json").is_file():
            print(f"safety: skipped (no model at {args.safety_model})")
            continue
        step = steps[name]
        here_s, here = timed(lambda: step(IN_PROCESS, "here"))  # noqa: B023 - called at once
        there_s, there = timed(lambda: step(on_ray, "there"))  # noqa: B023
        print(
            f"{name}: in-process {here_s:.1f} s, ray ({args.cpus} CPUs, {args.actors} actors) "
            f"{there_s:.1f} s, ratio {there_s / here_s:.1f}x, equal {here == there}",
            flush=True,
        )
    print(
        f"load average {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} on {os.cpu_count()} CPUs"
    )


if __name__ == "__main__":
    main()
