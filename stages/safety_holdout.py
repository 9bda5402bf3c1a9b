"""DVC stage safety_holdout: what moderation does for families it has never seen, on dev data.

Cross-fits the safety model by family over the frozen labels, classes every labelled item as a
hidden family's item would be (rules only; rules + model), and runs the shipped system over the
labels' corpus's scored dev benchmark with each set of classes (mambomeme/moderation/holdout.py,
mambomeme/moderation/holdout_run.py). Writes <reports>/safety-holdout.json and .md.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run  # noqa: E402

from mambomeme.moderation.holdout import BLIND  # noqa: E402
from mambomeme.moderation.holdout_run import SERVED, safety_holdout  # noqa: E402


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    report = safety_holdout()
    lists = report["lists"]
    seen = lists[BLIND[1]]
    print(
        f"safety holdout: {report['system']} on {report['benchmark']}, families unseen: "
        f"safe-list {seen['safe_list_ordinary']} (ordinary) / {seen['safe_list_safety']} "
        f"(safety); as served {lists[SERVED]['safe_list_ordinary']}"
    )


if __name__ == "__main__":
    run(main)
