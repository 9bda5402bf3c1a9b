"""Hand one blind annotator pass to several helper sessions, and merge their sheets back.

    python scripts/annotation_chunks.py split --pool pools/dev-v3 --annotator annotator-a \
        --parts 4 --out /work/annot            # -> /work/annot/annotator-a-1/sheet.csv ...
    python scripts/annotation_chunks.py merge --pool pools/dev-v3 --annotator annotator-a \
        --parts-dir /work/annot --out /work/annot/annotator-a.csv

split: the annotator's sheet.csv (blind, in its own shuffled order) cut into parts of whole
queries, each part a folder with its rows, the grading guide and the safety policy. Outside the
repository (the sheets hold corpus text).
merge: the parts' graded sheets joined in the original row order. One pass must give an item
one safety class; where its parts disagree the merged row says `unsafe` (the annotation rule
"when unsure, choose unsafe") and the merge reports how many items that touched. The result is
then imported with `mambomeme import-annotations --out judgements/B/<annotator>.csv`, which
checks it against the assignment and never overwrites.
"""

from __future__ import annotations

import argparse
import csv
import shutil
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GUIDE_FILES = (
    ROOT.parent / "shared/benchmark/SAFETY-POLICY.md",
    ROOT.parent / "shared/benchmark/FORMAT.md",
)


def _rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        cells = [row for row in csv.reader(handle) if row and not row[0].startswith("#")]
    if not cells:
        return [], []
    header = cells[0]
    return header, [dict(zip(header, row, strict=True)) for row in cells[1:]]


def split(pool: Path, annotator: str, parts: int, out: Path) -> None:
    columns, rows = _rows(pool / annotator / "sheet.csv")
    by_query: dict[str, list[dict[str, str]]] = defaultdict(list)
    for row in rows:
        by_query[row["qid"]].append(row)
    chunks: list[list[dict[str, str]]] = [[] for _ in range(parts)]
    for qid in by_query:  # greedy by size, first-seen (shuffled) query order
        min(chunks, key=len).extend(by_query[qid])
    for number, chunk in enumerate(chunks, 1):
        folder = out / f"{annotator}-{number}"
        folder.mkdir(parents=True, exist_ok=False)
        with (folder / "sheet.csv").open("w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, columns)
            writer.writeheader()
            writer.writerows(chunk)
        for path in GUIDE_FILES:
            shutil.copy(path, folder / path.name)
        print(f"{folder}: {len(chunk)} rows, {len({r['qid'] for r in chunk})} queries")


def merge(pool: Path, annotator: str, parts_dir: Path, out: Path) -> int:
    _, original = _rows(pool / annotator / "sheet.csv")
    graded: dict[tuple[str, str], dict[str, str]] = {}
    for folder in sorted(parts_dir.glob(f"{annotator}-*")):
        _, rows = _rows(folder / "graded.csv")
        for row in rows:
            graded[(row["qid"], row["item_id"])] = row
    missing = [(r["qid"], r["item_id"]) for r in original if (r["qid"], r["item_id"]) not in graded]
    if missing:
        print(f"{len(missing)} rows not graded, e.g. {missing[:3]}", file=sys.stderr)
        return 1
    classes: dict[str, set[str]] = defaultdict(set)
    for row in graded.values():
        classes[row["item_id"]].add(row["safety"].strip().lower())
    mixed = {item for item, seen in classes.items() if len(seen) > 1}
    if out.exists():
        print(f"{out} exists; never overwritten", file=sys.stderr)
        return 1
    with out.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["qid", "item_id", "grade", "safety", "note"])
        for row in original:
            got = graded[(row["qid"], row["item_id"])]
            safety = "unsafe" if row["item_id"] in mixed else got["safety"].strip().lower()
            writer.writerow(
                [row["qid"], row["item_id"], got["grade"].strip(), safety, got.get("note", "")]
            )
    print(
        f"{out}: {len(original)} rows; {len(mixed)} items with two safety classes across parts"
        " -> unsafe"
    )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    one = sub.add_parser("split")
    two = sub.add_parser("merge")
    for p in (one, two):
        p.add_argument("--pool", type=Path, required=True)
        p.add_argument("--annotator", required=True)
        p.add_argument("--out", type=Path, required=True)
    one.add_argument("--parts", type=int, required=True)
    two.add_argument("--parts-dir", type=Path, required=True)
    args = parser.parse_args()
    if args.command == "split":
        split(args.pool, args.annotator, args.parts, args.out)
        return 0
    return merge(args.pool, args.annotator, args.parts_dir, args.out)


if __name__ == "__main__":
    sys.exit(main())
