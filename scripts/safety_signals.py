"""Experiment (issue 33, points 3 and 5): which extra signals earn a place in the safety model,
measured on families the model never saw; and would more labelled dev items help.

Not a stage: a seeded harness over the same labels, items, features and decision rule as
stages safety_model and safety_holdout (mambomeme/moderation). For each set of signals
(models/safety/signals.py) beside MiniLM, the rules and the template prior:

1. train as stage safety_model does (fit on train, C and threshold chosen on validation);
2. cross-fit by family as stage safety_holdout does (each labelled item scored by a model that
   never saw its family) with that C: average precision, and recall / precision / masked
   share at the chosen threshold (rules OR p >= threshold), over all labelled items; plus the
   best precision any threshold reaches at recall >= 0.70 (is the target reachable at all);
3. the masked share of the corpus: the model applied to every item as ingest applies it
   (frozen labels as overrides), i.e. the share of items.parquet that would be `unsafe`.

`curve`: the learning curve, cross-fitted AP when each fold trains on a seeded share (25%,
50%, 100%) of its training families (`--by families`) or of their labelled items (`--by
items`), so the gain per doubling of labelled families or items is measured.

    nice python scripts/safety_signals.py signals --out build/safety-signals.json
    nice python scripts/safety_signals.py curve --by items --out build/curve-items.json

Reads params.yaml (safety_model, ingest.knowledge, dense); the corpus is read by path through
its source adapter; nothing but ids and numbers is written.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from mambomeme.config import corpus_config, load_params  # noqa: E402
from mambomeme.corpus.safety import classifier_from_config  # noqa: E402
from mambomeme.models.safety import features as sf  # noqa: E402
from mambomeme.models.safety import model as sm  # noqa: E402
from mambomeme.models.safety import signals  # noqa: E402
from mambomeme.models.safety import train as st  # noqa: E402
from mambomeme.models.safety.features import embedder_from_params  # noqa: E402
from mambomeme.models.safety.train import read_corpus_items, train_from_labels  # noqa: E402
from mambomeme.moderation import holdout  # noqa: E402
from mambomeme.moderation.labels import read_labels_tsv  # noqa: E402

VARIANTS = {
    "baseline (MiniLM + rules + template prior)": [],
    "+ template_risk": ["template_risk"],
    "+ hatesonar": ["hatesonar"],
    "+ profanity": ["profanity"],
    "+ template_risk + hatesonar": ["template_risk", "hatesonar"],
    "+ all three": ["template_risk", "hatesonar", "profanity"],
}
BASELINE = next(iter(VARIANTS))
TARGET_RECALL = 0.70


@dataclasses.dataclass
class Context:
    settings: dict[str, Any]
    items: dict[str, Any]
    rules: Any
    embed: Any
    rows: list[Any]
    knowledge: Path
    risk: dict[str, str]
    folds: int


def context() -> Context:
    params = load_params()
    settings = dict(params["safety_model"])
    corpus = str(settings["corpus"])
    view = load_params(corpus=corpus)
    _, config = corpus_config(view, corpus)
    knowledge = Path(str(view["ingest"]["knowledge"]))
    return Context(
        settings,
        read_corpus_items(config),
        classifier_from_config(config),
        embedder_from_params(view["dense"]),
        read_labels_tsv(Path(settings["labels"])),
        knowledge,
        signals.template_risk(knowledge),
        int(view["safety_holdout"]["folds"]),
    )


def best_precision_at(probability: dict[str, float], hit: dict[str, bool], rows: list[Any]) -> Any:
    """The best precision of (rule hit OR p >= t) over thresholds t whose recall on all
    labelled items is >= TARGET_RECALL, with that t's recall and masked share."""
    y = np.asarray([r.safety == "unsafe" for r in rows])
    p = np.asarray([probability[r.item_id] for r in rows])
    h = np.asarray([hit[r.item_id] for r in rows])
    best: dict[str, float] | None = None
    for t in sorted(set(p[y].tolist()), reverse=True):
        flagged = h | (p >= t)
        recall = float((flagged & y).sum() / y.sum())
        if recall < TARGET_RECALL:
            continue
        precision = float((flagged & y).sum() / flagged.sum())
        if best is None or precision > best["precision"]:
            masked = round(float(flagged.mean()), 4)
            best = {"threshold": round(t, 4), "recall": round(recall, 4),
                    "precision": round(precision, 4), "masked": masked}  # fmt: skip
    return best


def ap_gain_interval(
    probability: dict[str, float], baseline: dict[str, float], rows: list[Any], seed: int,
    resamples: int = 1000,
) -> list[float]:  # fmt: skip
    """95% interval of AP(variant) - AP(baseline), resampling whole families (paired)."""
    from sklearn.metrics import average_precision_score

    by_family: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        by_family.setdefault(r.family, []).append(i)
    groups = list(by_family.values())
    y = np.asarray([int(r.safety == "unsafe") for r in rows])
    p = np.asarray([probability[r.item_id] for r in rows])
    b = np.asarray([baseline[r.item_id] for r in rows])
    rng = random.Random(seed)
    gains = []
    for _ in range(resamples):
        idx = [i for _ in groups for i in rng.choice(groups)]
        if y[idx].sum():
            gains.append(average_precision_score(y[idx], p[idx])
                         - average_precision_score(y[idx], b[idx]))  # fmt: skip
    return [round(float(np.percentile(gains, q)), 4) for q in (2.5, 97.5)]


def measure(ctx: Context, names: list[str]) -> tuple[dict[str, Any], dict[str, float]]:
    started = time.time()
    settings = dict(ctx.settings, signals=names)
    model, report = train_from_labels(
        Path(settings["labels"]), ctx.items, ctx.rules, ctx.embed, settings, ctx.knowledge
    )
    c = float(report["figures"]["c"])
    seed = int(settings["seed"])
    probability, hit = holdout.cross_fitted(
        ctx.rows, ctx.items, ctx.rules, ctx.embed, c, seed, ctx.folds, names, ctx.risk
    )
    classes = holdout.blind_classes(probability, hit, model.threshold)[holdout.BLIND[1]]
    unseen = holdout.classification_figures(classes, ctx.rows)["all"]
    known = {r.item_id: r.safety for r in ctx.rows}
    corpus = list(ctx.items.values())
    applied = sm.apply(model, corpus, ctx.rules, ctx.embed, known, ctx.risk)
    unsafe = sum(it.safety == "unsafe" for it in applied.items)
    return {
        "signals": names,
        "versions": report["signals"]["versions"],
        "c": c,
        "threshold": round(model.threshold, 4),
        "validation_ap_by_c": report["figures"]["c_grid_average_precision"],
        "test_split": {
            k: report["figures"]["test"][k] for k in ("recall", "precision", "masked_fraction")
        },  # fmt: skip
        "unseen_average_precision": holdout.average_precision(probability, ctx.rows),
        "unseen_at_threshold": unseen,
        "unseen_best_precision_at_recall_0.70": best_precision_at(probability, hit, ctx.rows),
        "corpus_masked_share": round(unsafe / len(corpus), 4),
        "corpus_unsafe": unsafe,
        "corpus_items": len(corpus),
        "seconds": round(time.time() - started, 1),
    }, probability


def curve(
    ctx: Context, names: list[str], shares: list[float], repeats: int, by: str
) -> dict[str, Any]:
    """Cross-fitted AP when each fold keeps a seeded share of its training families
    (`by` = families: more families labelled) or of the labelled items of every training
    family (`by` = items: more items labelled in the same families)."""
    from sklearn.metrics import average_precision_score
    from sklearn.model_selection import GroupKFold

    labelled = [ctx.items[r.item_id] for r in ctx.rows]
    vectors = ctx.embed([sf.safety_document(it) for it in labelled])
    rule_x = np.vstack([sf.rule_features(it, ctx.rules) for it in labelled])
    extra = signals.matrix(names, labelled, ctx.risk)
    y = np.asarray([int(r.safety == "unsafe") for r in ctx.rows])
    families = [r.family for r in ctx.rows]
    groups = [it.template_group for it in labelled]
    seed = int(ctx.settings["seed"])
    c = 0.1
    out: dict[str, Any] = {
        "signals": names, "c": c, "by": by, "families": len(set(families)), "items": len(y),
        "ap": {},
    }  # fmt: skip
    for share in shares:
        aps = []
        for repeat in range(repeats if share < 1 else 1):
            rng = random.Random(seed + repeat)
            probability = np.zeros(len(y))
            for fit_idx, held in GroupKFold(n_splits=ctx.folds).split(vectors, y, families):
                if by == "families":
                    fams = sorted({families[i] for i in fit_idx})
                    keep = set(rng.sample(fams, max(2, round(share * len(fams)))))
                    idx = np.asarray([i for i in fit_idx if families[i] in keep])
                else:
                    idx = np.asarray(sorted(rng.sample(list(fit_idx), round(share * len(fit_idx)))))
                priors = sf.Priors.fit([groups[i] for i in idx], y[idx])
                fit_prior = np.asarray([priors.value(groups[i], int(y[i])) for i in idx])
                held_prior = np.asarray([priors.value(groups[i]) for i in held])
                model = st.fit_calibrated(
                    sf.feature_matrix(vectors[idx], rule_x[idx], fit_prior, extra[idx]),
                    y[idx], [families[i] for i in idx], c, seed, ctx.folds, priors,
                )  # fmt: skip
                probability[held] = model.probability(
                    sf.feature_matrix(vectors[held], rule_x[held], held_prior, extra[held])
                )
            aps.append(float(average_precision_score(y, probability)))
        out["ap"][str(share)] = {"mean": round(float(np.mean(aps)), 4),
                                 "each": [round(a, 4) for a in aps]}  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=["signals", "curve"])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", nargs="*", help="variant names (default: all)")
    parser.add_argument("--signals", nargs="*", default=[], help="curve: signals to include")
    parser.add_argument("--repeats", type=int, default=3, help="curve: draws per share < 1")
    parser.add_argument("--by", choices=["families", "items"], default="families")
    args = parser.parse_args()
    ctx = context()
    result: dict[str, Any]
    if args.mode == "signals":
        result = {}
        base: dict[str, float] = {}
        for name, names in VARIANTS.items():
            if args.only and name not in args.only and name != BASELINE:
                continue
            result[name], probability = measure(ctx, names)
            if name == BASELINE:
                base = probability
            else:
                result[name]["unseen_ap_gain_95"] = ap_gain_interval(
                    probability, base, ctx.rows, int(ctx.settings["seed"])
                )
            print(name, json.dumps(result[name]), flush=True)
    else:
        result = curve(ctx, list(args.signals), [0.25, 0.5, 1.0], args.repeats, args.by)
        print(json.dumps(result))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
