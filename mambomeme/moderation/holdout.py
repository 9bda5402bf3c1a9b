"""What moderation does for a family it has never seen, measured on dev families.

Every labelled dev item is masked or kept by its frozen two-pass label (ingest applies the labels
as overrides), so the scorecard's dev safe-list rates say nothing about a hidden family, whose
items only the lexicon and the model see. This module measures that case on dev data alone:

1. `cross_fitted`: each labelled item's probability from a model fitted without its family
   (group K-fold over the label families; the stage's features, L2 strength and calibration),
   so every family is scored as an unseen one;
2. `blind_classes`: the class each labelled item gets with no human verdict: by the rules
   alone, and by rules OR probability >= the shipped model's threshold;
3. `measure`: a system over the scored dev benchmark with those classes in place
   (`ItemTable.reclassify`, in memory), its lists judged by the human labels: the benchmark's
   safety.tsv, else the label version;
4. `annotator_ceiling`: each blind annotator pass's recall and precision against the final
   labels, per split: how close one careful person comes.

Nothing here is tuned: it reads the shipped model's C and threshold and reports.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mambomeme.corpus.safety import SafetyClassifier
from mambomeme.corpus.schema import Item
from mambomeme.evaluation.benchmark import Benchmark
from mambomeme.evaluation.runner import run_benchmark
from mambomeme.evaluation.runs import MAX_RESULTS, Run
from mambomeme.evaluation.score import OutcomeTable, aggregate, evaluate_run
from mambomeme.models.safety import features as sf
from mambomeme.models.safety import model as sm
from mambomeme.models.safety import signals
from mambomeme.models.safety import train as st
from mambomeme.moderation.labels import LabelRow, read_round

Embed = Callable[[Sequence[str]], np.ndarray]
BLIND = ("rules only", "rules + model (family unseen)")


def cross_fitted(
    rows: Sequence[LabelRow],
    items: Mapping[str, Item],
    rules: SafetyClassifier,
    embed: Embed,
    c: float,
    seed: int,
    folds: int,
    signal_names: Sequence[str] = (),
    risk: Mapping[str, str] | None = None,
) -> tuple[dict[str, float], dict[str, bool]]:
    """(item id -> probability from a model that never saw the item's family, item id -> rule
    hit). Folds keep families whole; each fold's template priors come from its training part
    only, so a held-out family gets the overall rate, as a hidden one does. `signal_names`
    (with `risk` for template risk) adds the model's extra signals, which need no labels."""
    from sklearn.model_selection import GroupKFold

    labelled = [items[r.item_id] for r in rows]
    vectors = embed([sf.safety_document(it) for it in labelled])
    rule_x = np.vstack([sf.rule_features(it, rules) for it in labelled])
    extra_x = signals.matrix(signal_names, labelled, risk)
    y = np.asarray([int(r.safety == "unsafe") for r in rows])
    families = [r.family for r in rows]
    groups = [it.template_group for it in labelled]
    probability = np.zeros(len(rows))
    for fit_idx, held in GroupKFold(n_splits=folds).split(vectors, y, families):
        priors = sf.Priors.fit([groups[i] for i in fit_idx], y[fit_idx])
        fit_prior = np.asarray([priors.value(groups[i], int(y[i])) for i in fit_idx])
        held_prior = np.asarray([priors.value(groups[i]) for i in held])
        model = st.fit_calibrated(
            sf.feature_matrix(vectors[fit_idx], rule_x[fit_idx], fit_prior, extra_x[fit_idx]),
            y[fit_idx],
            [families[i] for i in fit_idx],
            c,
            seed,
            folds,
            priors,
        )
        probability[held] = model.probability(
            sf.feature_matrix(vectors[held], rule_x[held], held_prior, extra_x[held])
        )
    ids = [r.item_id for r in rows]
    return (
        {i: float(p) for i, p in zip(ids, probability, strict=True)},
        {i: bool(h) for i, h in zip(ids, rule_x[:, -1] > 0, strict=True)},
    )


def average_precision(probability: Mapping[str, float], rows: Sequence[LabelRow]) -> float:
    """Average precision of the cross-fitted probabilities against the labels (all splits):
    how well the model ranks unsafe items of families it never saw, threshold aside."""
    from sklearn.metrics import average_precision_score

    y = [int(r.safety == "unsafe") for r in rows]
    return round(float(average_precision_score(y, [probability[r.item_id] for r in rows])), 4)


def blind_classes(
    probability: Mapping[str, float], rule_hit: Mapping[str, bool], threshold: float
) -> dict[str, dict[str, str]]:
    """BLIND variant -> item id -> safe | unsafe, for the labelled items."""

    def cls(unsafe: bool) -> str:
        return "unsafe" if unsafe else "safe"

    return {
        BLIND[0]: {i: cls(rule_hit[i]) for i in probability},
        BLIND[1]: {i: cls(rule_hit[i] or p >= threshold) for i, p in probability.items()},
    }


def classification_figures(
    classes: Mapping[str, str], rows: Sequence[LabelRow]
) -> dict[str, dict[str, float | int]]:
    """Recall, precision and masked fraction of `classes` against the labels, per split."""
    out: dict[str, dict[str, float | int]] = {}
    for split in ("train", "validation", "test", "all"):
        part = [r for r in rows if split in ("all", r.split)]
        flagged = np.asarray([classes[r.item_id] == "unsafe" for r in part], dtype=bool)
        y = np.asarray([r.safety == "unsafe" for r in part], dtype=bool)
        tp = int((flagged & y).sum())
        out[split] = {
            "items": len(part),
            "unsafe": int(y.sum()),
            "recall": round(tp / max(int(y.sum()), 1), 4),
            "precision": round(tp / max(int(flagged.sum()), 1), 4),
            "masked_fraction": round(float(flagged.mean()) if len(part) else 0.0, 4),
        }
    return out


@dataclass(frozen=True)
class Setup:
    """What a measurement needs, read from params (`prepare`)."""

    corpus: str
    rows: list[LabelRow]
    probability: dict[str, float]  # cross-fitted, by item id
    rule_hit: dict[str, bool]
    model: sm.SafetyModel
    folds: int
    benchmark: Benchmark
    truth: dict[str, str]  # item id -> safe | unsafe: the benchmark's safety.tsv, else the labels
    engine: Any
    system: str
    reports: Path


def prepare(params_file: Path) -> Setup:
    """Cross-fit the labels of `safety_model.corpus` and open that corpus's build with the
    shipped selection, as the params file configures them (its `safety_holdout` section too)."""
    from mambomeme.config import build_dir, corpus_config, load_params, scored_benchmark_dir
    from mambomeme.corpus.safety import classifier_from_config
    from mambomeme.evaluation.benchmark import load_benchmark
    from mambomeme.models.safety.features import embedder_from_params
    from mambomeme.models.safety.train import read_corpus_items
    from mambomeme.moderation.labels import read_labels_tsv
    from mambomeme.search.engine import Engine
    from mambomeme.search.shipped import shipped

    settings = load_params(params_file)["safety_model"]
    corpus = str(settings["corpus"])
    view = load_params(params_file, corpus=corpus)
    _, config = corpus_config(view, corpus)
    rows = read_labels_tsv(Path(settings["labels"]))
    items = read_corpus_items(config)
    knowledge = Path(str(view["ingest"]["knowledge"]))
    model = sm.load_model(Path(settings["out"]), knowledge)
    folds = int(view["safety_holdout"]["folds"])
    probability, rule_hit = cross_fitted(
        rows,
        items,
        classifier_from_config(config),
        embedder_from_params(view["dense"]),
        float(model.info["figures"]["c"]),
        int(settings["seed"]),
        folds,
        model.signals,
        signals.template_risk(knowledge) if "template_risk" in model.signals else None,
    )
    benchmark = load_benchmark(scored_benchmark_dir(view))
    truth = {r.item_id: r.safety for r in rows} | dict(benchmark.safety)
    build = build_dir(view, corpus)
    reports = Path(str(view["base"]["reports"]))
    ship = shipped(view, build, reports)
    engine = Engine.open(build, ship.params)
    return Setup(
        corpus, rows, probability, rule_hit, model, folds, benchmark, truth, engine,
        ship.system, reports,
    )  # fmt: skip


def run_with(
    engine: Any, benchmark: Benchmark, system: str, classes: Mapping[str, str] | None
) -> Run:
    """`system` over `benchmark` with `classes` in place (None: as the engine has them). The
    engine's item table is reclassified in memory and left so."""
    if classes is not None:
        engine.items.reclassify(classes)

    def search(cues: list[str], filters: Any) -> Any:
        return engine.search(cues, limit=MAX_RESULTS, filters=filters, system=system)

    return run_benchmark(benchmark, search, system, items=engine.items)


def measure(
    engine: Any,
    benchmark: Benchmark,
    system: str,
    classes: Mapping[str, str] | None,
    truth: Mapping[str, str],
) -> dict[str, Any]:
    """`system` over `benchmark` with `classes` in place (None: the build as served); each shown
    list judged by `truth` (human labels; an item in neither counts as unsafe, as the scorer
    does). The engine's item table is reclassified in memory and left so (`run_with`)."""
    run = run_with(engine, benchmark, system, classes)
    judged = dataclasses.replace(benchmark, safety=dict(truth))
    outcomes = evaluate_run(judged, run)
    c = aggregate(OutcomeTable.of(outcomes))
    unsafe_shown = sum(
        1 for ranking in run.rankings.values() for i in ranking if truth.get(i) == "unsafe"
    )
    ranks: dict[str, int] = {}
    for ranking in run.rankings.values():
        for rank, item_id in enumerate(ranking, start=1):
            if truth.get(item_id) == "unsafe":
                ranks[str(rank)] = ranks.get(str(rank), 0) + 1
    s_value = c.S or 0.0
    objective = 0.55 * (c.Q or 0.0) + 0.15 * (c.E or 0.0) + 0.10 * c.C + 0.10 * s_value
    return {
        "safe_list_ordinary": _round(c.safe_ordinary),
        "safe_list_safety": _round(c.safe_safety),
        "unsafe_ranks": dict(sorted(ranks.items(), key=lambda kv: int(kv[0]))),
        "objective": _round(objective),
        "hit10": _round(c.hit10),
        "safety_hit10": _round(c.safety_hit10),
        "Q": _round(c.Q),
        "correct_empty": _round(c.correct_empty),
        "errors": len(run.errors),
        "lists_with_unsafe": sum(not o.safe for o in outcomes if o.shown),
        "unsafe_items_shown": unsafe_shown,
        "unlabelled_items_shown": sum(o.unjudged_safety for o in outcomes),
        "queries": len(outcomes),
    }


def risk_aware(
    engine: Any,
    benchmark: Benchmark,
    system: str,
    classes: Mapping[str, str],
    probability: Mapping[str, float],
    truth: Mapping[str, str],
    grid: Mapping[str, Sequence[float]],
) -> dict[str, dict[str, Any]]:
    """The shipped system with `classes` in place and each labelled item's cross-fitted
    P(unsafe) as its risk, under every (low, margin) of `grid` (search/usefulness.RiskRule;
    "off" = no rule): what risk-aware lists do for families nobody labelled. Objective: the
    tuning objective 0.55 Q + 0.15 E + 0.10 C + 0.10 S with S judged by the human labels.
    Only a system served through a usefulness model reads the rule."""
    from mambomeme.search.usefulness import RiskRule

    engine.items.set_risk(probability)
    found = {"off": measure(engine.with_config(dataclasses.replace(engine.config, risk=None)),
                            benchmark, system, classes, truth)}  # fmt: skip
    for low in grid["low"]:
        for margin in grid["margin"]:
            rule = RiskRule(float(low), float(margin))
            tuned = engine.with_config(dataclasses.replace(engine.config, risk=rule))
            found[f"low {low} margin {margin}"] = {
                "low": float(low),
                "margin": float(margin),
                **measure(tuned, benchmark, system, classes, truth),
            }
    return found


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)


def annotator_ceiling(
    rounds: Sequence[Path], rows: Sequence[LabelRow]
) -> dict[str, dict[str, dict[str, float | int]]]:
    """Each blind pass (annotator-a, annotator-b over all rounds) against the final labels:
    recall and precision per split. Optimistic for the pass: its own votes shaped the final
    labels (the third annotator only settled disagreements)."""
    final = {r.item_id: r for r in rows}
    votes: dict[str, dict[str, str]] = {}
    for folder in rounds:
        passes, _ = read_round(Path(folder))
        for annotator in ("annotator-a", "annotator-b"):
            for item_id, label in passes.get(annotator, {}).items():
                votes.setdefault(annotator, {})[item_id] = label.safety
    out: dict[str, dict[str, dict[str, float | int]]] = {}
    for annotator, found in sorted(votes.items()):
        out[annotator] = {}
        for split in ("train", "validation", "test", "all"):
            ids = [i for i in found if i in final and split in ("all", final[i].split)]
            y = np.asarray([final[i].safety == "unsafe" for i in ids], dtype=bool)
            flagged = np.asarray([found[i] == "unsafe" for i in ids], dtype=bool)
            tp = int((y & flagged).sum())
            out[annotator][split] = {
                "items": len(ids),
                "recall": round(tp / max(int(y.sum()), 1), 4),
                "precision": round(tp / max(int(flagged.sum()), 1), 4),
            }
    return out


def report_markdown(report: Mapping[str, Any]) -> str:
    """The report as a page: classification on the labelled items, then the shipped system's
    lists with each set of classes, then the annotator ceiling."""
    lines = [
        f"# Moderation on unseen families: {report['corpus']} / {report['benchmark']}",
        "",
        "Dev data only. Each labelled dev item is classed as a hidden family's item would be: "
        "no human verdict, a model fitted without its family "
        f"({report['folds']}-fold cross-fitting by family, C {report['c']}, the shipped "
        f"threshold {report['threshold']:.4f}). `as served` is the build with the labels as "
        "overrides (what the scorecard measures). Lists are judged by the human labels "
        "(benchmark safety.tsv, then the label version). Command: `dvc repro safety_holdout`.",
        "",
        f"Model signals beside MiniLM, rules and template prior: "
        f"{', '.join(report.get('signals', [])) or 'none'}. Cross-fitted average precision "
        f"(all labelled items, families unseen): {report.get('average_precision', 'n/a')}.",
        "",
        "## Classification of the labelled items (recall / precision / masked)",
        "",
        *_split_table(
            "classes", report["classification"], ("recall", "precision", "masked_fraction")
        ),
    ]
    lines += [
        "",
        f"## `{report['system']}` over {report['benchmark']} ({report['queries']} queries)",
        "",
        "| classes | safe-list (ordinary) | safe-list (safety subset) | lists with an unsafe "
        "item | unsafe items shown | Hit@10 | safety Hit@10 | Q | CorrectEmpty |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, m in report["lists"].items():
        lines.append(
            f"| {name} | {_cell(m['safe_list_ordinary'])} | {_cell(m['safe_list_safety'])} | "
            f"{m['lists_with_unsafe']} | {m['unsafe_items_shown']} | {_cell(m['hit10'])} | "
            f"{_cell(m['safety_hit10'])} | {_cell(m['Q'])} | {_cell(m['correct_empty'])} |"
        )
    if report.get("risk_aware"):
        lines += [
            "",
            "## Risk-aware lists (families unseen: rules + model classes, cross-fitted risk)",
            "",
            "A candidate with P(unsafe) >= low waits below every safe-looking candidate whose "
            "P(useful) is within `margin` of its own and never ends a list "
            "(search/usefulness.py). Served: "
            f"{report.get('risk_served') or 'no rule'}.",
            "",
            "| rule | safe-list (ordinary) | safe-list (safety subset) | unsafe items shown | "
            "ranks of unsafe items | Hit@10 | Q | objective |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for name, m in report["risk_aware"].items():
            ranks = ", ".join(f"{r}: {n}" for r, n in m["unsafe_ranks"].items()) or "none"
            lines.append(
                f"| {name} | {_cell(m['safe_list_ordinary'])} | {_cell(m['safe_list_safety'])} "
                f"| {m['unsafe_items_shown']} | {ranks} | {_cell(m['hit10'])} | "
                f"{_cell(m['Q'])} | {_cell(m['objective'])} |"
            )
    lines += [
        "",
        "## One annotator against the final labels (recall / precision)",
        "",
        "Optimistic for the annotator: each pass's votes shaped the final labels.",
        "",
        *_split_table("pass", report["annotator_ceiling"], ("recall", "precision")),
    ]
    return "\n".join(lines) + "\n"


def _split_table(
    head: str, rows: Mapping[str, Mapping[str, Mapping[str, Any]]], keys: Sequence[str]
) -> list[str]:
    """A markdown table: one row per entry, one column per split, `keys` joined by " / "."""
    splits = ("train", "validation", "test", "all")
    lines = [f"| {head} | " + " | ".join(splits) + " |", "| --- " * (len(splits) + 1) + "|"]
    for name, figures in rows.items():
        cells = [" / ".join(f"{figures[s][k]:.3f}" for k in keys) for s in splits]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def _cell(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"
