"""Draw the hand-review sample for the safety classifier and print it to the terminal.

    python scripts/safety_review.py --corpus memes-10k --seed 20261201 [--n 50]

Reads the corpus through its source adapter (params.yaml `corpora`), keeps only items of
families marked `dev` in ../shared/benchmark/families.csv (benchmark hygiene: hidden families
are never reviewed or written about), then draws, with random.Random(seed), `n` items the
classifier flags and `n` it does not, and prints id, the classifier's reason and the text.
The printout holds corpus text: read it, never paste it into the repository; record only
item id, verdict and category in docs/safety-review.md. Prints the unsafe counts too.
"""

from __future__ import annotations

import argparse
import csv
import importlib
import random
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from mambomeme.corpus.safety import POLICY_VERSION, classifier_from_config  # noqa: E402
from mambomeme.corpus.schema import Item, validate_record  # noqa: E402


def dev_families(path: Path) -> set[str]:
    with path.open(encoding="utf-8", newline="") as handle:
        return {row["family"] for row in csv.DictReader(handle) if row["partition"] == "dev"}


def family_of(item: Item) -> str:
    """The families.csv family of an item: template groups 'tg:<slug>', memecap posts."""
    if item.template_group.startswith("tg:"):
        return "template:" + item.template_group[3:]
    if item.id.startswith("memecap:"):
        return "post:memecap-" + item.id.split(":", 1)[1]
    return ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="memes-10k")
    parser.add_argument("--params", type=Path, default=REPO / "params.yaml")
    parser.add_argument(
        "--families", type=Path, default=REPO / ".." / "shared" / "benchmark" / "families.csv"
    )
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--width", type=int, default=400, help="characters of text shown per item")
    args = parser.parse_args()

    config = yaml.safe_load(args.params.read_text())["corpora"][args.corpus]
    adapter = importlib.import_module(f"mambomeme.corpus.sources.{config['source']}")
    classifier = classifier_from_config(config)
    dev = dev_families(args.families)
    flagged: list[tuple[Item, str]] = []
    unflagged: list[tuple[Item, str]] = []
    total = unsafe = 0
    for raw in adapter.read_records(config):
        if raw.record is None:
            continue
        item = validate_record(raw.record, raw.where)
        total += 1
        unsafe += item.safety == "unsafe"
        if family_of(item) not in dev:
            continue
        decision = classifier.classify(
            item.title, item.ocr_text, item.meaning, item.visual_description, item.id
        )
        (flagged if decision.safety == "unsafe" else unflagged).append(
            (item, f"{decision.category} {decision.reason}")
        )
    print(f"# {POLICY_VERSION} on {args.corpus}: {unsafe} of {total} items unsafe;")
    print(f"# dev families: {len(flagged)} flagged, {len(unflagged)} unflagged; seed {args.seed}")
    rng = random.Random(args.seed)
    for label, pool in (("FLAGGED", flagged), ("UNFLAGGED", unflagged)):
        sample = rng.sample(pool, min(args.n, len(pool)))
        print(f"\n## {label} sample ({len(sample)} of {len(pool)})")
        for item, reason in sample:
            text = " | ".join(
                t for t in (item.title, item.ocr_text, item.meaning, item.visual_description) if t
            )
            print(f"{item.id}\t[{reason}]\t{text[: args.width]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
