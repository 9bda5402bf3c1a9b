"""Integrity probes: is a corrupted build ever served, do concurrent `add` runs crash, and do
file names that are not UTF-8 come back as their bytes? (issues 18 and 35, rerunnable)

    python scripts/probe_integrity.py --build build/fixture [--flips 6] [--seed 1]
        [--warm-flips 2] [--skip flips,concurrent,names,warm]

flips: for every artifact of the build (items.parquet, lexical.sqlite, each dense matrix and
ids file, each term-list file, the reranker's model and tokenizer, a sample of previews),
`--flips` times (items.parquet 5x) and in two layouts -- "manifest" (the corpus manifest beside
the copy, as the repository serves it) and "bare" (no manifest: a copied build, checked against
the checksums it wrote about itself) -- copy the build to a fresh temporary folder, flip one
random bit of that file, open the engine on the copy and search a few queries (lexical and
hybrid). Each probe ends one of three ways:

- refused: a typed MamboMemeError (the engine would not serve the copy);
- served: the copy opened and answered (a corrupt artifact served: the defect counted);
- untyped: any other exception (a crash: also a defect).

Each layout first serves an unchanged copy (the control: a refusal there would make every
other count meaningless; before issue 35 the probe passed a str as the cues, a BoundError that
counted every probe as refused). Then, in each layout, flips of items.parquet's safety column
chosen to turn an unsafe item safe while the file still reads (the flips that used to be
served).

A bare build records no checksum of its preview cards (only the corpus manifest does), so
previews are probed in the manifest layout only; the line says so.

concurrent: a library home gets a first folder, then two `add` runs on two more folders start
at once (separate processes) while this process opens the served library and searches it in a
loop. Counts: add runs that ended 0 or 3 (the lock's typed refusal) vs crashed; searches that
answered, refused with a typed error (before the first build), or crashed (untyped).

names: a folder of images whose names are not UTF-8 (Latin-1, a lone continuation byte, an
overlong sequence, a name with '%' and one that looks like a URI) is added; each must be
indexed and found, and its result's path (what `search --paths -0` writes) must be the exact
bytes on disk.

warm: a warm search server (`mambomeme serve`, its own process) first answers for an unchanged
copy, then one random bit of an artifact of that copy is flipped in place and the same request
is sent: the server must not answer from the engine it holds (the build's stamp changed, so it
opens the copy again and the check refuses it: the client searches in-process, which refuses
too). Counts: refused (no warm answer) vs served (a warm answer for the flipped copy: a defect);
a clean copy that is not served warm is a failed control.

Remembered content checks go to a temporary folder so that every copy is checked as a first
open would be.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
QUERIES = ["john cena", "you can't see me", "pretending to be invisible"]
LINKED = ("query-encoder", "reranker")  # large folders linked into each copy unless flipped
PREVIEW_SAMPLE = 3
ITEMS_WEIGHT = 5  # items.parquet gets 5x the flips: the table the safety mask is read from
ODD_NAMES = (
    b"caf\xe9 latin one.png",
    b"lone \x80 continuation.png",
    b"overlong \xc0\xaf slash.png",
    b"percent %41 \xff.png",
    b"file: like a uri \xfe.png",
)


def artifacts(build: Path, rng: random.Random) -> list[str]:
    """The served artifacts (their JSON manifests left out: they are what the bytes are checked
    against), the reranker's files and a sample of previews."""
    found = [build / "items.parquet", build / "lexical.sqlite"]
    found += sorted((build / "dense").glob("dense*")) + sorted((build / "term-lists").glob("*"))
    found += [build / "reranker" / "model.onnx", build / "reranker" / "tokenizer.json"]
    previews = sorted((build / "previews").glob("*.png"))
    found += rng.sample(previews, min(PREVIEW_SAMPLE, len(previews)))
    keep = [p for p in found if p.is_file() and not _is_manifest(p)]
    return [p.relative_to(build).as_posix() for p in keep]


def _is_manifest(path: Path) -> bool:
    """A JSON file that records checksums of the others (dense*.json, manifest.json)."""
    return path.name == "manifest.json" or (
        path.parent.name == "dense" and path.suffix == ".json" and ".ids." not in path.name
    )


def _copy(build: Path, copy: Path, rel: str, bare: bool) -> None:
    shutil.copytree(build, copy, symlinks=True, ignore=shutil.ignore_patterns(*LINKED))
    for name in LINKED:
        if (build / name).exists():
            if rel.startswith(name + "/"):
                shutil.copytree(build / name, copy / name)
            else:
                (copy / name).symlink_to((build / name).resolve())
    manifest = ROOT / "manifests" / f"corpus-{build.name}.json"
    if not bare and manifest.is_file():
        shutil.copy(manifest, copy / manifest.name)


def eligibility_flips(items: Path, limit: int, rng: random.Random) -> list[tuple[int, int]]:
    """(byte, bit) of single-bit flips of the safety column that leave items.parquet readable
    and make more items eligible (an unsafe item turned safe: issue 35's finding), `limit` of
    them sampled."""
    import io

    import pyarrow.parquet as pq

    from mambomeme.index import integrity

    data = items.read_bytes()
    columns = list(integrity.ELIGIBILITY_COLUMNS)
    before = integrity.eligible_mask(pq.read_table(io.BytesIO(data), columns=columns)).sum()
    meta = pq.ParquetFile(io.BytesIO(data)).metadata.row_group(0)
    chunk = next(
        meta.column(i) for i in range(meta.num_columns) if meta.column(i).path_in_schema == "safety"
    )
    start = chunk.dictionary_page_offset or chunk.data_page_offset
    found = []
    for at in range(start, start + chunk.total_compressed_size):
        for bit in range(8):
            flipped = bytearray(data)
            flipped[at] ^= 1 << bit
            try:
                table = pq.read_table(io.BytesIO(bytes(flipped)), columns=columns)
                if integrity.eligible_mask(table).sum() > before:
                    found.append((at, bit))
            except Exception:  # noqa: BLE001 - most flips break the page
                continue
    return sorted(rng.sample(found, min(limit, len(found))))


def probe(
    build: Path,
    rel: str,
    rng: random.Random,
    params: dict[str, Any],
    bare: bool,
    flip: tuple[int, int] | None = None,
) -> str:
    from mambomeme.errors import MamboMemeError
    from mambomeme.search.engine import Engine

    with tempfile.TemporaryDirectory(prefix="probe-") as scratch:
        copy = Path(scratch) / build.name
        _copy(build, copy, rel, bare)
        target = copy / rel
        data = bytearray(target.read_bytes())
        at, bit = flip if flip is not None else (rng.randrange(len(data)), rng.randrange(8))
        if bit >= 0:  # bit -1: the control, an unchanged copy that must be served
            data[at] ^= 1 << bit
            target.write_bytes(bytes(data))
        try:
            engine = Engine.open(copy, params)
            engine.load("hybrid")
            for query in QUERIES:
                engine.search([query], system="bm25")  # cues are a list (a str: BoundError)
                engine.search([query], system="hybrid")
        except MamboMemeError:
            return "refused"
        except Exception as exc:  # noqa: BLE001 - the probe counts what it catches
            print(f"    untyped {type(exc).__name__} for {rel} @ byte {at}: {exc}", file=sys.stderr)
            return "untyped"
        return "served"


def run_flips(build: Path, flips: int, rng: random.Random, params: dict[str, Any]) -> Counter[str]:
    totals: Counter[str] = Counter()
    for layout in ("manifest", "bare"):
        control = probe(build, "items.parquet", rng, params, layout == "bare", (0, -1))
        print(f"flips, layout {layout}: control (no flip) {control}")
        if control != "served":
            raise SystemExit(f"the unchanged {layout} copy is {control}: the probe proves nothing")
        for rel in artifacts(build, random.Random(0)):
            if layout == "bare" and rel.startswith("previews/"):
                print(f"  {rel:<36} skipped: a bare build records no preview checksum")
                continue
            times = flips * (ITEMS_WEIGHT if rel == "items.parquet" else 1)
            outcome = Counter(probe(build, rel, rng, params, layout == "bare")
                              for _ in range(times))  # fmt: skip
            totals.update(outcome)
            print(f"  {rel:<36} " + "  ".join(f"{k} {outcome[k]}" for k in ("refused", "served",
                  "untyped")))  # fmt: skip
        chosen = eligibility_flips(build / "items.parquet", flips * ITEMS_WEIGHT, rng)
        outcome = Counter(probe(build, "items.parquet", rng, params, layout == "bare", flip)
                          for flip in chosen)  # fmt: skip
        totals.update(outcome)
        print(f"  {'items.parquet (unsafe -> safe)':<36} " + "  ".join(
            f"{k} {outcome[k]}" for k in ("refused", "served", "untyped")))  # fmt: skip
    print(f"flips total {sum(totals.values())} probes: refused {totals['refused']}, "
          f"served-corrupt {totals['served']}, untyped {totals['untyped']}")  # fmt: skip
    return totals


def run_warm(build: Path, flips: int, rng: random.Random, params: dict[str, Any]) -> Counter[str]:
    from mambomeme.search.results import Filters
    from mambomeme.warm import wire
    from mambomeme.warm.client import exchange, warm_search
    from mambomeme.warm.server import ServeConfig

    totals: Counter[str] = Counter()
    with tempfile.TemporaryDirectory(prefix="probe-warm-") as scratch:
        os.environ["MAMBOMEME_RUNTIME_DIR"] = str(Path(scratch) / "run")
        os.environ["MAMBOMEME_WARM"] = "1"
        folder = wire.runtime_dir()
        server = _cli("serve", "--idle", "600")  # the real server, in its own process
        deadline = time.monotonic() + 60
        while not (folder / wire.SOCKET_NAME).exists() and time.monotonic() < deadline:
            time.sleep(0.1)

        def ask(copy: Path) -> bool:
            answer = warm_search(copy, params, "bm25", [QUERIES[0]], 10, Filters(), start=False)
            return answer is not None

        try:
            for layout in ("manifest", "bare"):
                for rel in artifacts(build, random.Random(0)):
                    if layout == "bare" and rel.startswith("previews/"):
                        continue
                    outcome: Counter[str] = Counter()
                    for number in range(flips):
                        copy = Path(scratch) / f"{layout}-{rel.replace('/', '_')}-{number}" / "x"
                        _copy(build, copy, rel, layout == "bare")
                        if not ask(copy):
                            outcome["control failed"] += 1
                            continue
                        data = bytearray((copy / rel).read_bytes())
                        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
                        (copy / rel).write_bytes(bytes(data))
                        outcome["served" if ask(copy) else "refused"] += 1
                    totals.update(outcome)
                    kinds = ("refused", "served", "control failed")
                    counts = "  ".join(f"{k} {outcome[k]}" for k in kinds)
                    print(f"  warm {layout:<8} {rel:<36} {counts}")
        finally:
            exchange(folder, {"stop": True}, ServeConfig())
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    print(f"warm total {sum(totals.values())} probes: refused {totals['refused']}, "
          f"served-corrupt {totals['served']}, "
          f"control failed {totals['control failed']}")  # fmt: skip
    return totals


def _cli(*argv: str) -> subprocess.Popen[bytes]:
    import mambomeme

    package = Path(mambomeme.__file__).resolve().parents[1]  # the code this probe imports
    env = {**os.environ, "PYTHONPATH": str(package), "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "mambomeme.cli", *argv]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def run_concurrent(scratch: Path) -> Counter[str]:
    """Two adds at once while this process searches the served library."""
    from mambomeme.errors import MamboMemeError
    from mambomeme.library.synthetic import CAPTIONS, write_memes
    from mambomeme.search.engine import Engine
    from mambomeme.serving import serving_target

    home = scratch / "home"
    folders = [scratch / f"memes-{n}" for n in range(3)]
    for n, folder in enumerate(folders):
        write_memes(folder, CAPTIONS[n * 4 : n * 4 + 4], seed=n)
    first = _cli("add", str(folders[0]), "--home", str(home), "--ocr", "none", "--quiet")
    first.communicate(timeout=600)
    counts: Counter[str] = Counter()
    runs = [_cli("add", str(f), "--home", str(home), "--ocr", "none", "--quiet", "--wait", "300")
            for f in folders[1:]]  # fmt: skip
    while any(r.poll() is None for r in runs):
        try:
            target = serving_target(None, home=home)
            engine = Engine.open(target.build, target.params)
            engine.load("hybrid")
            engine.search(["walk into mordor"], system="hybrid")
            counts["search answered"] += 1
        except MamboMemeError:
            counts["search refused (typed)"] += 1
        except Exception as exc:  # noqa: BLE001 - the probe counts what it catches
            print(f"    untyped {type(exc).__name__} in a search: {exc}", file=sys.stderr)
            counts["search untyped"] += 1
        time.sleep(0.05)
    for run in runs:
        _, err = run.communicate()
        ok = run.returncode in (0, 3) and b"Traceback" not in err
        counts["add ok" if ok else "add crashed"] += 1
        if not ok:
            print(f"    add exit {run.returncode}: {err.decode(errors='replace')[-800:]}",
                  file=sys.stderr)  # fmt: skip
    print("concurrent: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return counts


def run_names(scratch: Path) -> Counter[str]:
    """Non-UTF-8 file names: indexed, found, and given back as their exact bytes."""
    from mambomeme.library.synthetic import CAPTIONS, write_memes
    from mambomeme.search.engine import Engine
    from mambomeme.serving import absolute_preview, serving_target

    home, folder = scratch / "names-home", scratch / "names"
    drawn = write_memes(folder, CAPTIONS[: len(ODD_NAMES)], seed=3)
    wanted: dict[bytes, str] = {}
    for (path, caption), name in zip(drawn, ODD_NAMES, strict=True):
        odd = os.fsencode(folder) + b"/" + name
        os.rename(os.fsencode(path), odd)
        wanted[odd] = caption
    run = _cli("add", str(folder), "--home", str(home), "--ocr", "none", "--quiet", "--json")
    out, err = run.communicate(timeout=600)
    counts: Counter[str] = Counter(names=len(ODD_NAMES))
    if run.returncode != 0:
        print(f"    add exit {run.returncode}: {err.decode(errors='replace')[-800:]}",
              file=sys.stderr)  # fmt: skip
        counts["add crashed"] += 1
        print("names: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
        return counts
    target = serving_target(None, home=home)
    engine = Engine.open(target.build, target.params)
    counts["indexed"] = len(engine.items.ids)
    for odd in wanted:
        words = os.fsdecode(odd).rsplit("/", 1)[1].rsplit(".", 1)[0]
        query = " ".join(w for w in words.split() if w.isascii() and w.isalpha())
        response = engine.search([query], system="bm25")
        paths = [os.fsencode(absolute_preview(target.build, r.preview)) for r in response.results]
        counts["exact bytes" if paths[:1] == [odd] else "not given back"] += 1
    print("names: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, required=True)
    parser.add_argument("--params", type=Path, default=ROOT / "params.yaml")
    parser.add_argument("--flips", type=int, default=6)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--warm-flips", type=int, default=2, help="flips per artifact, warm")
    parser.add_argument(
        "--skip", default="", help="comma-separated: flips, concurrent, names, warm"
    )
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    os.environ["MAMBOMEME_VERIFIED_DIR"] = tempfile.mkdtemp(prefix="probe-verified-")
    from mambomeme.config import load_params

    params = load_params(args.params)
    rng = random.Random(args.seed)
    started = time.perf_counter()
    defects = 0
    if "flips" not in skip:
        totals = run_flips(args.build, args.flips, rng, params)
        defects += totals["served"] + totals["untyped"]
    if "warm" not in skip:
        totals = run_warm(args.build, args.warm_flips, rng, params)
        defects += totals["served"] + totals["control failed"]
    with tempfile.TemporaryDirectory(prefix="probe-library-") as scratch:
        if "concurrent" not in skip:
            counts = run_concurrent(Path(scratch))
            defects += counts["search untyped"] + counts["add crashed"]
        if "names" not in skip:
            counts = run_names(Path(scratch))
            defects += counts["not given back"] + counts["add crashed"]
            defects += counts["names"] - counts["indexed"]
    print(f"defects {defects} (served-corrupt + untyped + crashed + names lost + warm), "
          f"{time.perf_counter() - started:.0f} s")  # fmt: skip


if __name__ == "__main__":
    main()
