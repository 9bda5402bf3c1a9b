"""DVC stage safety_holdout: what moderation does for families it has never seen, on dev data.

Cross-fits the safety model by family over the frozen labels, classes every labelled item as a
hidden family's item would be (rules only; rules + model), and runs the shipped system over the
labels' corpus's scored dev benchmark with each set of classes (mambomeme/moderation/holdout.py).
Writes <reports>/safety-holdout.json and .md.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run  # noqa: E402

from mambomeme.config import build_dir, corpus_config, load_params, scored_benchmark_dir  # noqa: E402
from mambomeme.corpus.manifest import sha256_file, write_json_atomic  # noqa: E402
from mambomeme.corpus.safety import classifier_from_config  # noqa: E402
from mambomeme.errors import MamboMemeError  # noqa: E402
from mambomeme.evaluation.benchmark import load_benchmark  # noqa: E402
from mambomeme.moderation import holdout  # noqa: E402
from mambomeme.moderation.labels import read_labels_tsv  # noqa: E402
from mambomeme.moderation.model import load_model  # noqa: E402
from mambomeme.moderation.training import embedder, read_corpus_items  # noqa: E402
from mambomeme.search.shipped import shipped  # noqa: E402


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    base = load_params()
    settings = base["safety_model"]
    corpus = str(settings["corpus"])
    params = load_params(corpus=corpus)
    _, config = corpus_config(params, corpus)
    labels = Path(settings["labels"])
    rows = read_labels_tsv(labels)
    items = read_corpus_items(config)
    rules = classifier_from_config(config)
    dense = params["dense"]
    cache = Path(dense["cache_dir"]) if dense.get("cache_dir") else None
    embed = embedder(
        cache, int(dense["batch_size"]), str(dense["device"]), int(dense["shard_size"])
    )
    model = load_model(Path(settings["out"]))
    c = float(model.info["figures"]["c"])
    folds = int(params["safety_holdout"]["folds"])
    probability, rule_hit = holdout.cross_fitted(
        rows, items, rules, embed, c, int(settings["seed"]), folds
    )
    blind = holdout.blind_classes(probability, rule_hit, model.threshold)
    benchmark = load_benchmark(scored_benchmark_dir(params))
    truth = {r.item_id: r.safety for r in rows} | dict(benchmark.safety)
    build = build_dir(params, corpus)
    reports = Path(str(params["base"]["reports"]))
    if reports != Path(str(params["safety_holdout"]["reports"])):
        raise MamboMemeError(
            f"params safety_holdout.reports is {params['safety_holdout']['reports']!r} but "
            f"corpora.{corpus}.reports is {str(reports)!r}: DVC would watch the wrong files"
        )
    ship = shipped(params, build, reports)
    from mambomeme.search.engine import Engine

    engine = Engine.open(build, ship.params)
    lists = {"as served (labels as overrides)": holdout.measure(
        engine, benchmark, ship.system, None, truth
    )}  # fmt: skip
    for name, classes in blind.items():
        lists[name] = holdout.measure(engine, benchmark, ship.system, classes, truth)
    rounds = [Path(p) for p in params["safety_holdout"]["rounds"]]
    report = {
        "corpus": corpus,
        "benchmark": benchmark.info.name,
        "benchmark_sha256": benchmark.sha256,
        "labels": {"path": str(labels), "sha256": sha256_file(labels)},
        "model_sha256": model.info.get("model_sha256"),
        "system": ship.system,
        "queries": len(benchmark.queries),
        "folds": folds,
        "c": c,
        "threshold": model.threshold,
        "classification": {
            name: holdout.classification_figures(classes, rows) for name, classes in blind.items()
        },
        "lists": lists,
        "annotator_ceiling": holdout.annotator_ceiling(rounds, rows),
    }
    out = reports / "safety-holdout.json"
    write_json_atomic(out, report)
    page = out.with_suffix(".md")
    tmp = page.with_name(f".{page.name}.tmp")
    tmp.write_text(holdout.report_markdown(report), encoding="utf-8")
    tmp.replace(page)
    seen = lists[holdout.BLIND[1]]
    print(
        f"safety holdout: {ship.system} on {benchmark.info.name}, families unseen: safe-list "
        f"{seen['safe_list_ordinary']} (ordinary) / {seen['safe_list_safety']} (safety); "
        f"as served {lists['as served (labels as overrides)']['safe_list_ordinary']}"
    )


if __name__ == "__main__":
    run(main)
