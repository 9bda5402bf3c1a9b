"""CLI registration: `mambomeme safety check-labels` (more safety commands join here)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from mambomeme.moderation import labels


def register(sub: Any) -> None:
    s = sub.add_parser("safety", help="safety labels, model and review queue")
    ssub = s.add_subparsers(dest="safety_command", required=True)
    c = ssub.add_parser("check-labels", help="validate an annotator's safety label file")
    c.add_argument("file", type=Path)
    c.add_argument("--sheet", type=Path, required=True, help="the annotator's sheet folder")
    c.set_defaults(handler=run_check_labels)
    f = ssub.add_parser("freeze-labels", help="finalise a labelling round into a new version")
    f.add_argument("round", type=Path, help="e.g. safety/labels/annotations/v1")
    f.add_argument("--out", type=Path, required=True, help="e.g. safety/labels/v1 (must not exist)")
    f.add_argument("--items", type=Path, required=True, help="the corpus build's items.parquet")
    f.add_argument("--split-seed", type=int, default=20261202)
    f.set_defaults(handler=run_freeze_labels)


def run_check_labels(args: argparse.Namespace) -> int:
    ids = (args.sheet / "ids.txt").read_text(encoding="utf-8").split()
    found = labels.read_label_file(args.file, ids)
    unsafe = sum(lab.safety == "unsafe" for lab in found.values())
    print(f"{args.file}: {len(found)} items labelled ({unsafe} unsafe); ok")
    return 0


def run_freeze_labels(args: argparse.Namespace) -> int:
    import pyarrow.parquet as pq

    table = pq.read_table(args.items, columns=["id", "template_group"]).to_pydict()
    families = {
        i: labels.item_family(g) for i, g in zip(table["id"], table["template_group"], strict=True)
    }
    stats = labels.freeze_round(args.round, args.out, families, args.split_seed)
    print(
        f"{args.out}: {stats['final_items']} items, {stats['final_unsafe']} unsafe; "
        f"kappa {stats['kappa']:.3f}, {stats['disputed']} settled by annotator-c"
    )
    return 0
