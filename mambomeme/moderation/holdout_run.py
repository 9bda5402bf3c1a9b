"""The safety_holdout stage's work: what moderation does for families it has never seen.

Cross-fits the safety model by family over the frozen labels, classes every labelled item as a
hidden family's item would be (rules only; rules + model), and runs the shipped system over the
labels' corpus's scored dev benchmark with each set of classes (moderation/holdout.py). Writes
<safety_holdout.reports>/safety-holdout.json and .md; dev data only.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from mambomeme.config import DEFAULT_PARAMS, load_params
from mambomeme.corpus.manifest import sha256_file, write_json_atomic
from mambomeme.errors import MamboMemeError
from mambomeme.moderation import holdout

SERVED = "as served (labels as overrides)"


def safety_holdout(params_path: Path = DEFAULT_PARAMS) -> dict[str, Any]:
    """Measure, write the report (JSON and its page) and return what the JSON holds."""
    params = load_params(params_path)
    setup = holdout.prepare(params_path)
    wanted = Path(str(params["safety_holdout"]["reports"]))
    if setup.reports != wanted:
        raise MamboMemeError(
            f"params safety_holdout.reports is {str(wanted)!r} but corpora.{setup.corpus}.reports "
            f"is {str(setup.reports)!r}: DVC would watch the wrong files"
        )
    blind = holdout.blind_classes(setup.probability, setup.rule_hit, setup.model.threshold)
    lists = {
        SERVED: holdout.measure(setup.engine, setup.benchmark, setup.system, None, setup.truth)
    }
    for name, classes in blind.items():
        lists[name] = holdout.measure(
            setup.engine, setup.benchmark, setup.system, classes, setup.truth
        )
    risk = holdout.risk_aware(
        setup.engine,
        setup.benchmark,
        setup.system,
        blind[holdout.BLIND[1]],
        setup.probability,
        setup.truth,
        params["safety_holdout"]["risk_grid"],
    )
    labels = Path(str(params["safety_model"]["labels"]))
    rounds = [Path(p) for p in params["safety_holdout"]["rounds"]]
    report = {
        "corpus": setup.corpus,
        "benchmark": setup.benchmark.info.name,
        "benchmark_sha256": setup.benchmark.sha256,
        "labels": {"path": str(labels), "sha256": sha256_file(labels)},
        "model_sha256": setup.model.info.get("model_sha256"),
        "system": setup.system,
        "queries": len(setup.benchmark.queries),
        "folds": setup.folds,
        "c": float(setup.model.info["figures"]["c"]),
        "threshold": setup.model.threshold,
        "signals": list(setup.model.signals),
        "average_precision": holdout.average_precision(setup.probability, setup.rows),
        "classification": {
            name: holdout.classification_figures(classes, setup.rows)
            for name, classes in blind.items()
        },
        "lists": lists,
        "risk_aware": risk,
        "risk_served": setup.engine.config.risk and dataclasses.asdict(setup.engine.config.risk),
        "annotator_ceiling": holdout.annotator_ceiling(rounds, setup.rows),
    }
    out = setup.reports / "safety-holdout.json"
    write_json_atomic(out, report)
    page = out.with_suffix(".md")
    tmp = page.with_name(f".{page.name}.tmp")
    tmp.write_text(holdout.report_markdown(report), encoding="utf-8")
    tmp.replace(page)
    return report
