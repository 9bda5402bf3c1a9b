"""`mambomeme safety check-labels|freeze-labels|review|import-review` (moderation/)."""

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
    f.add_argument("--base", type=Path, help="an earlier version whose labels the new one keeps")
    f.set_defaults(handler=run_freeze_labels)
    r = ssub.add_parser("review", help="export items near the model's threshold for review")
    r.add_argument("--build", type=Path, required=True, help="a corpus build (items.parquet)")
    r.add_argument("--model", type=Path, default=Path("build/safety-model"))
    r.add_argument("--out", type=Path, required=True, help="new folder for the review sheet")
    r.add_argument("--band", type=float, default=0.1, help="|p - threshold| at most this")
    r.add_argument("--limit", type=int, default=200)
    r.add_argument("--labels", type=Path, default=Path("safety/labels/v2"))
    r.add_argument("--params", type=Path, default=Path("params.yaml"))
    r.set_defaults(handler=run_review)
    i = ssub.add_parser("import-review", help="verdicts -> overrides + a new label version")
    i.add_argument("file", type=Path, help="the reviewer's item_id,safety,category,note CSV")
    i.add_argument("--sheet", type=Path, required=True, help="the review folder it answers")
    i.add_argument("--build", type=Path, required=True, help="the corpus build it was drawn from")
    i.add_argument("--labels", type=Path, required=True, help="the current label version")
    i.add_argument("--out", type=Path, required=True, help="the new label version (new folder)")
    i.add_argument("--overrides", type=Path, default=Path("safety/overrides.csv"))
    i.add_argument("--split-seed", type=int, default=20261202)
    i.set_defaults(handler=run_import_review)


def run_check_labels(args: argparse.Namespace) -> int:
    ids = (args.sheet / "ids.txt").read_text(encoding="utf-8").split()
    found = labels.read_label_file(args.file, ids)
    unsafe = sum(lab.safety == "unsafe" for lab in found.values())
    print(f"{args.file}: {len(found)} items labelled ({unsafe} unsafe); ok")
    return 0


def run_freeze_labels(args: argparse.Namespace) -> int:
    families = labels.item_families(args.items)
    stats = labels.freeze_round(args.round, args.out, families, args.split_seed, args.base)
    print(
        f"{args.out}: {stats['final_items']} items, {stats['final_unsafe']} unsafe; "
        f"kappa {stats['kappa']:.3f}, {stats['disputed']} settled by annotator-c"
    )
    return 0


def run_review(args: argparse.Namespace) -> int:
    from mambomeme.config import load_params
    from mambomeme.moderation import review

    chosen, threshold = review.review_near_threshold(
        args.build,
        args.model,
        args.labels,
        load_params(args.params),
        args.out,
        args.band,
        args.limit,
    )
    print(
        f"{args.out}: {len(chosen)} item(s) within {args.band} of threshold "
        f"{threshold:.4f}; label them as in docs/safety-labels.md, then "
        f"`mambomeme safety import-review FILE --sheet {args.out} ...`"
    )
    return 0


def run_import_review(args: argparse.Namespace) -> int:
    from mambomeme.moderation import review

    done = review.import_verdicts(
        args.file,
        args.sheet,
        args.labels,
        args.out,
        args.overrides,
        labels.item_families(args.build / "items.parquet"),
        args.split_seed,
        f"review {args.sheet.name}",
    )
    print(
        f"{done.new_version}: {done.labels_added} new label(s); {done.overrides_added} "
        f"override(s) added to {args.overrides}, {done.overrides_kept} item(s) kept their "
        "earlier override"
    )
    return 0
