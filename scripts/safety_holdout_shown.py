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

from mambomeme.config import build_dir, corpus_config, load_params, scored_benchmark_dir  # noqa: E402
from mambomeme.corpus.safety import classifier_from_config  # noqa: E402
from mambomeme.evaluation.benchmark import load_benchmark  # noqa: E402
from mambomeme.evaluation.runner import run_benchmark  # noqa: E402
from mambomeme.evaluation.runs import MAX_RESULTS  # noqa: E402
from mambomeme.moderation import holdout  # noqa: E402
from mambomeme.moderation.labels import read_labels_tsv  # noqa: E402
from mambomeme.moderation.model import load_model  # noqa: E402
from mambomeme.moderation.training import embedder, read_corpus_items  # noqa: E402
from mambomeme.search.engine import Engine  # noqa: E402
from mambomeme.search.shipped import shipped  # noqa: E402


def main() -> None:
    os.chdir(ROOT)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    settings = load_params()["safety_model"]
    corpus = str(settings["corpus"])
    params = load_params(corpus=corpus)
    _, config = corpus_config(params, corpus)
    rows = read_labels_tsv(Path(settings["labels"]))
    items = read_corpus_items(config)
    dense = params["dense"]
    cache = Path(dense["cache_dir"]) if dense.get("cache_dir") else None
    embed = embedder(
        cache, int(dense["batch_size"]), str(dense["device"]), int(dense["shard_size"])
    )
    model = load_model(Path(settings["out"]))
    probability, hit = holdout.cross_fitted(
        rows,
        items,
        classifier_from_config(config),
        embed,
        float(model.info["figures"]["c"]),
        int(settings["seed"]),
        int(params["safety_holdout"]["folds"]),
    )
    classes = holdout.blind_classes(probability, hit, model.threshold)[holdout.BLIND[1]]
    benchmark = load_benchmark(scored_benchmark_dir(params))
    truth = {r.item_id: r.safety for r in rows} | dict(benchmark.safety)
    build = build_dir(params, corpus)
    ship = shipped(params, build, Path(str(params["base"]["reports"])))
    engine = Engine.open(build, ship.params)
    engine.items.reclassify(classes)
    run = run_benchmark(
        benchmark,
        lambda cues, filters: engine.search(
            cues, limit=MAX_RESULTS, filters=filters, system=ship.system
        ),
        ship.system,
        items=engine.items,
    )
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
