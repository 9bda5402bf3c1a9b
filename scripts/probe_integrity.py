"""Bit-flip probe: is a corrupted build ever served? (issue 18's probe, rerunnable)

    python scripts/probe_integrity.py --build build/fixture [--flips 20] [--seed 1]

For every artifact of the build (items.parquet, lexical.sqlite, each dense matrix and ids file,
each term-list file), `--flips` times: copy the build to a fresh temporary folder, flip one
random bit of that file, open the engine on the copy and search a few queries (lexical and
hybrid). Each probe ends one of three ways:

- refused: a typed MamboMemeError (the engine would not serve the copy);
- served: the copy opened and answered (a corrupt artifact served: the defect counted);
- untyped: any other exception (a crash: also a defect).

Prints one line per artifact and the totals. Remembered content checks go to a temporary
folder so that every copy is checked as a first open would be.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUERIES = ["john cena", "you can't see me", "pretending to be invisible"]


def artifacts(build: Path) -> list[str]:
    """The served artifacts (their JSON manifests left out: they are what the bytes are checked
    against)."""
    found = [build / "items.parquet", build / "lexical.sqlite"]
    found += sorted((build / "dense").glob("dense*")) + sorted((build / "term-lists").glob("*"))
    keep = [
        p for p in found if p.is_file() and (p.suffix != ".json" or p.name.endswith(".ids.json"))
    ]
    return [p.relative_to(build).as_posix() for p in keep]


def probe(build: Path, rel: str, rng: random.Random, params: dict[str, object]) -> str:
    from mambomeme.errors import MamboMemeError
    from mambomeme.search.engine import Engine

    with tempfile.TemporaryDirectory(prefix="probe-") as scratch:
        copy = Path(scratch) / build.name
        shutil.copytree(build, copy, symlinks=True, ignore=shutil.ignore_patterns("query-encoder"))
        (copy / "query-encoder").symlink_to((build / "query-encoder").resolve())
        manifest = ROOT / "manifests" / f"corpus-{build.name}.json"
        if manifest.is_file():
            shutil.copy(manifest, copy / manifest.name)
        target = copy / rel
        data = bytearray(target.read_bytes())
        at = rng.randrange(len(data))
        data[at] ^= 1 << rng.randrange(8)
        target.write_bytes(bytes(data))
        try:
            engine = Engine.open(copy, params)
            engine.load("hybrid")
            for query in QUERIES:
                engine.search(query, system="bm25")
                engine.search(query, system="hybrid")
        except MamboMemeError:
            return "refused"
        except Exception as exc:  # noqa: BLE001 - the probe counts what it catches
            print(f"    untyped {type(exc).__name__} for {rel} @ byte {at}: {exc}", file=sys.stderr)
            return "untyped"
        return "served"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, required=True)
    parser.add_argument("--params", type=Path, default=ROOT / "params.yaml")
    parser.add_argument("--flips", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    os.environ["MAMBOMEME_VERIFIED_DIR"] = tempfile.mkdtemp(prefix="probe-verified-")
    from mambomeme.config import load_params

    params = load_params(args.params)
    rng = random.Random(args.seed)
    totals: Counter[str] = Counter()
    for rel in artifacts(args.build):
        outcome = Counter(probe(args.build, rel, rng, params) for _ in range(args.flips))
        totals.update(outcome)
        print(f"  {rel:<32} " + "  ".join(f"{k} {outcome[k]}" for k in ("refused", "served",
              "untyped")))  # fmt: skip
    print(f"total {sum(totals.values())} probes: refused {totals['refused']}, "
          f"served {totals['served']}, untyped {totals['untyped']}")  # fmt: skip


if __name__ == "__main__":
    main()
