"""Which unsafe items the shipped system shows when every labelled dev family is treated as
unseen (the `safety_holdout` stage's "rules + model (family unseen)" classes), grouped by family.

Prints item ids, families, policy categories and the cross-fitted probability; no caption text.
Dev data only (the frozen labels are of dev families). About a minute on memes-10k:

    python scripts/safety_holdout_shown.py            # after dvc repro safety_holdout
"""

from __future__ import annotations

import collections
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mambomeme.config import DEFAULT_PARAMS  # noqa: E402
from mambomeme.moderation import holdout  # noqa: E402


def main() -> None:
    os.chdir(ROOT)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    setup = holdout.prepare(DEFAULT_PARAMS)
    classes = holdout.blind_classes(setup.probability, setup.rule_hit, setup.model.threshold)
    run = holdout.run_with(setup.engine, setup.benchmark, setup.system, classes[holdout.BLIND[1]])
    rows, truth, probability = setup.rows, setup.truth, setup.probability
    label = {r.item_id: r for r in rows}
    by_family: collections.Counter[str] = collections.Counter()
    lists: dict[str, set[str]] = collections.defaultdict(set)
    for qid, ranking in sorted(run.rankings.items()):
        for rank, item_id in enumerate(ranking, start=1):
            if truth.get(item_id) != "unsafe":
                continue
            row = label.get(item_id)
            family = row.family if row else "(not in the labels)"
            by_family[family] += 1
            lists[family].add(qid)
            category = row.category if row else "?"
            p = probability.get(item_id)
            shown_p = f"{p:.3f}" if p is not None else "n/a"
            print(f"{qid}\t{rank}\t{item_id}\t{family}\tcategory {category}\tp {shown_p}")
    total = sum(by_family.values())
    print(f"\n{total} unsafe items shown in {len({q for s in lists.values() for q in s})} lists")
    for family, count in by_family.most_common():
        print(f"{count:4d}  {family}  ({len(lists[family])} lists)")


if __name__ == "__main__":
    main()
