"""Assemble benchmarks/dev-v3 from the blind writers' files, and pool the shipped system.

    python scripts/assemble_devset.py --writers /work/writers/writer-a ... --out benchmarks/dev-v3

1. Each writer's queries.jsonl is checked against its own packet (scripts/check_queries.py's
   rules); any problem stops the assembly.
2. The folder is written (evaluation/devset.py): queries.jsonl, exact-targets.jsonl, pool.yaml,
   writing.jsonl, benchmark.json, split.yaml, AUDIT.md (corpus-wide lexical no-match audit).
3. pool-shipped.tsv: the top 10 of the shipped selection of today (<reports>/selection.json,
   the system served before dev-v3) for every query, dev-family items only, pooled as an
   earlier round (pool.yaml earlier_rounds): the shipped system is judged like every other.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mambomeme.config import load_params
from mambomeme.evaluation.devset import assemble, read_writer_file
from mambomeme.evaluation.pooling import item_family, read_partitions, read_queries
from mambomeme.evaluation.writing import check_file, read_rendered
from mambomeme.search.results import Filters
from mambomeme.search.shipped import from_selection

ROOT = Path(__file__).resolve().parents[1]
INFO = {
    "name": "dev-v3",
    "version": "v3",
    "partition": "dev",
    "corpus": "memes-10k@v1",
    "judgement_set": "unjudged",
    "provisional": True,
    "exposed": False,
}
SEEDS = {"annotator-a": 20261231, "annotator-b": 20261232}
SPLIT = {"salt": "dev-v3-check-20261205", "check_share": 0.3333}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=Path, nargs="+", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--build", type=Path, default=ROOT / "build" / "memes-10k")
    parser.add_argument("--selection", type=Path, default=ROOT / "reports/memes-10k/selection.json")
    args = parser.parse_args()
    rows = []
    for folder in args.writers:
        targets = read_rendered(folder / "corpus-targets.jsonl")
        avoid = (folder / "queries-to-avoid.txt").read_text(encoding="utf-8").splitlines()
        problems = check_file(folder / "queries.jsonl", targets, avoid)
        if problems:
            print("\n".join(problems), file=sys.stderr)
            return 1
        rows += read_writer_file(folder / "queries.jsonl", folder.name)
    from mambomeme.search.engine import Engine
    from mambomeme.search.items import ItemTable

    items = ItemTable(args.build)
    assemble(rows, args.out, INFO, SEEDS, SPLIT, items)
    params = load_params(ROOT / "params.yaml", "memes-10k")
    ship = from_selection(params, args.selection)
    engine = Engine.open(args.build, ship.params)
    dev = read_partitions(ROOT.parent / "shared" / "benchmark" / "families.csv")
    lines, left_out = [], 0
    for query in read_queries(args.out / "queries.jsonl"):
        found = engine.search(query.all_cues, 10, Filters(**query.filter_dict), ship.system)
        for result in found.results:
            if dev.get(item_family(items[result.item_id].template_group)) == "dev":
                lines.append(f"{query.qid}\t{result.item_id}\n")
            else:
                left_out += 1
    (args.out / "pool-shipped.tsv").write_text("".join(lines), encoding="utf-8")
    print(
        f"{args.out}: {len(rows)} queries from {len(args.writers)} writers; shipped "
        f"({ship.system}, {ship.source}) pooled {len(lines)} pairs, {left_out} hidden-family "
        "results left out"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
