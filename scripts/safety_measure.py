"""Measure the safety classifier on a built corpus: dev agreement, unsafe counts, review sample.

    python scripts/safety_measure.py --items build/memes-10k/items.parquet \\
        --labels judgement-sets/dev-v1/dev-v1-j1/safety.tsv [--old-lexicon OLD.txt] \\
        [--seed 20261210 --n 50 [--show]]

Re-classifies every item of items.parquet with the classifier in safety/ (lexicon + combos,
WITHOUT the per-item overrides, so the figures measure the rules) from the item's own fields
(title, OCR text with aliases, meaning, visual description; the same words ingest reads, so
a full `dvc repro` is not needed to see the effect of a lexicon change). Prints:

1. the unsafe count on the corpus (and with the overrides applied, which is what ingest stores);
2. agreement with the annotators' per-item labels (`--labels`, a judgement set's safety.tsv):
   precision and recall of `unsafe`, with an old lexicon alongside when `--old-lexicon` is given;
3. with `--seed`: a fresh review sample, random.Random(seed), of `n` flagged and `n` unflagged
   items from the frame = items of families marked `dev` in families.csv (benchmark hygiene:
   hidden families are never reviewed), minus the items in `--labels` (the dev pool) and minus
   the items in safety/overrides.csv (reviewed before). `--show` prints each sampled item's text
   to the terminal for the hand review: read it, never paste it into the repository.
"""

from __future__ import annotations

import argparse
import csv
import random
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from mambomeme.corpus.safety import (  # noqa: E402
    DEFAULT_DIR,
    OVERRIDES_FILE,
    SafetyClassifier,
    load_classifier,
    parse_lexicon,
    parse_overrides,
)


def dev_families(path: Path) -> set[str]:
    with path.open(encoding="utf-8", newline="") as handle:
        return {row["family"] for row in csv.DictReader(handle) if row["partition"] == "dev"}


def family_of(row: dict[str, Any]) -> str:
    """The families.csv family of an item: template groups 'tg:<slug>', memecap posts."""
    group = str(row["template_group"])
    if group.startswith("tg:"):
        return "template:" + group[3:]
    if str(row["id"]).startswith("memecap:"):
        return "post:memecap-" + str(row["id"]).split(":", 1)[1]
    return ""


def fields(row: dict[str, Any]) -> tuple[str, str, str, str]:
    ocr = str(row["ocr_text"] or "")
    aliases = list(row["aliases"] or [])
    if aliases:
        ocr = ocr + "\n" + ", ".join(aliases)
    return (str(row["title"] or ""), ocr, str(row["meaning"] or ""), str(row["visual_description"]))


def read_labels(path: Path) -> dict[str, str]:
    labels: dict[str, str] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        item_id, _, label = line.partition("\t")
        if label not in ("safe", "unsafe"):
            raise SystemExit(f"{path}:{number}: need '<item id>\\t<safe|unsafe>'")
        labels[item_id] = label
    return labels


def agreement(
    name: str, flags: dict[str, bool], labels: dict[str, str], rows: dict[str, dict[str, Any]]
) -> None:
    tp = fp = fn = 0
    for item_id, label in labels.items():
        if item_id not in rows:
            raise SystemExit(f"labelled item {item_id} is not in the corpus")
        flagged, unsafe = flags[item_id], label == "unsafe"
        tp += flagged and unsafe
        fp += flagged and not unsafe
        fn += unsafe and not flagged
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    print(
        f"{name}: {len(labels)} labelled, {tp + fn} unsafe; flagged {tp + fp}: "
        f"TP {tp} FP {fp} FN {fn}; precision {precision:.3f} recall {recall:.3f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=Path, required=True)
    parser.add_argument("--labels", type=Path, required=True)
    parser.add_argument("--old-lexicon", type=Path, help="a previous lexicon to compare with")
    parser.add_argument(
        "--families", type=Path, default=REPO / ".." / "shared" / "benchmark" / "families.csv"
    )
    parser.add_argument("--seed", type=int)
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--show", action="store_true", help="print the sampled items' text")
    parser.add_argument("--width", type=int, default=600)
    args = parser.parse_args()

    loaded = load_classifier()
    rules = SafetyClassifier(loaded.lexicon, {}, None, loaded.combos)
    classifiers = {"new": rules}
    if args.old_lexicon:
        old = parse_lexicon(args.old_lexicon.read_text(encoding="utf-8"), args.old_lexicon.name)
        classifiers["old"] = SafetyClassifier(old, {}, None)  # old rule: minor + sexual -> 2
    rows = {str(r["id"]): r for r in pq.read_table(args.items).to_pylist()}
    labels = read_labels(args.labels)
    overrides = parse_overrides(DEFAULT_DIR / OVERRIDES_FILE)
    flags: dict[str, dict[str, bool]] = {}
    for name, classifier in classifiers.items():
        flags[name] = {
            item_id: classifier.classify(*fields(row)).safety == "unsafe"
            for item_id, row in rows.items()
        }
        with_overrides = sum(
            (overrides[i][0] == "unsafe") if i in overrides else flagged
            for i, flagged in flags[name].items()
        )
        print(
            f"{name}: {sum(flags[name].values())} of {len(rows)} items unsafe by the rules, "
            f"{with_overrides} with the {len(overrides)} overrides"
        )
    for name in classifiers:
        agreement(f"{name} vs {args.labels}", flags[name], labels, rows)
    if args.seed is None:
        return 0

    dev = dev_families(args.families)
    frame = sorted(
        i
        for i, row in rows.items()
        if family_of(row) in dev and i not in labels and i not in overrides
    )
    flagged = [i for i in frame if flags["new"][i]]
    unflagged = [i for i in frame if not flags["new"][i]]
    print(
        f"frame: {len(frame)} dev-family items outside the labelled pool and the overrides; "
        f"new flags {len(flagged)}, unflagged {len(unflagged)}"
    )
    if "old" in flags:
        print(f"old flags in the frame: {sum(flags['old'][i] for i in frame)}")
    rng = random.Random(args.seed)
    for label, pool in (("FLAGGED", flagged), ("UNFLAGGED", unflagged)):
        sample = rng.sample(pool, min(args.n, len(pool)))
        print(f"\n## {label} sample ({len(sample)} of {len(pool)}, seed {args.seed})")
        for item_id in sample:
            old = "old:" + ("unsafe" if flags["old"][item_id] else "safe") if "old" in flags else ""
            reason = rules.classify(*fields(rows[item_id])).reason
            line = f"{item_id}\t{old}\t[{reason}]"
            if args.show:
                text = " | ".join(t for t in fields(rows[item_id]) if t).replace("\n", " / ")
                line += "\t" + text[: args.width]
            print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
