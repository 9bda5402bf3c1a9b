"""The tune stage's step for the usefulness model: data from params, train, keep it or not.

After the grid (and abstention) has chosen route weights, k and depth, the model is trained for
that config (train.py) and kept in the selection only when its out-of-fold tuning objective
beats the selection's own (the acceptance rule: a learned part earns its place on dev data);
either way the report says what was tried. Params (`usefulness`):
  enabled, pool, folds, seed, gbt {...}, item_thresholds, empty_thresholds,
  slang: the values of search.slang to train under (the chat-spelling cue changes the
  candidates); the best out of fold is kept and its value joins the selection's config,
  train_on: earlier dev benchmarks whose judgements add training rows (each with its newest
  judgement set), held_out: "benchmarks/B@check" entries whose query families never train.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mambomeme.config import TuningParams, UsefulnessTraining
from mambomeme.errors import TuningError
from mambomeme.evaluation.benchmark import Benchmark, load_benchmark
from mambomeme.evaluation.checks import second_check
from mambomeme.models.reranker.data import held_out_families
from mambomeme.models.usefulness.train import (
    QueryPool,
    collect,
    objective_for,
    train_usefulness,
)
from mambomeme.search.engine import Engine, EngineConfig
from mambomeme.search.shipped import set_search_keys
from mambomeme.search.systems import EVERY_ROUTE_SYSTEM

SYSTEM = EVERY_ROUTE_SYSTEM  # the model reads each route's evidence


def fit_for_selection(
    params: Mapping[str, Any],
    settings: UsefulnessTraining,
    engine: Engine,
    benchmark: Benchmark,
    config: Mapping[str, Any],
    selection_objective: float,
) -> dict[str, Any]:
    """Fields to add to selection.json: always `usefulness_report`; `usefulness` (the model)
    only when it beats `selection_objective` out of fold. `params` (the stage's) gives the
    engine config the model is trained under."""
    tried = []
    best: tuple[dict[str, Any], dict[str, Any]] | None = None
    slangs = settings.slang
    if slangs is None:
        slangs = (bool(params["search"].get("slang", False)),)
    for slang in slangs:
        mapping, report = _fit(params, settings, engine, benchmark, {**config, "slang": slang})
        tried.append({"slang": slang, "objective_out_of_fold": report["objective_out_of_fold"]})
        if best is None or report["objective_out_of_fold"] > best[1]["objective_out_of_fold"]:
            best = (mapping, report)
    if best is None:
        raise TuningError("usefulness.slang: no value to try")
    mapping, report = best
    won = report["objective_out_of_fold"] > selection_objective + 1e-12
    report = {**report, "slang_tried": tried, "selection_objective": selection_objective,
              "kept": won}  # fmt: skip
    fields: dict[str, Any] = {"usefulness_report": report, "usefulness": mapping if won else None}
    if won:  # the config the model was trained under, slang included, is what serves
        fields["config"] = report["config"]
    return fields


def _fit(
    params: Mapping[str, Any],
    settings: UsefulnessTraining,
    engine: Engine,
    benchmark: Benchmark,
    config: Mapping[str, Any],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The model and its report for one config (module docstring)."""
    seed, pool = settings.seed, settings.pool
    chosen = EngineConfig.from_params(
        {**params, "search": {**set_search_keys(params["search"], config), "abstention": None}}
    )
    tuned = engine.with_config(chosen)
    held_out: set[str] = set()
    for spec in settings.held_out:
        held_out |= held_out_families(spec)
    tune_pools = collect(tuned, benchmark, benchmark.info.name, SYSTEM, chosen, pool)
    extra: list[QueryPool] = []
    with tempfile.TemporaryDirectory(prefix="usefulness-") as tmp:
        for name in settings.train_on:
            target = second_check(
                name, Path("benchmarks"), Path("judgement-sets"), Path(tmp) / name
            )
            other = load_benchmark(target.benchmark_dir)
            extra += collect(tuned, other, name, SYSTEM, chosen, pool)
    floor = TuningParams.from_params(params["tuning"]).min_hit10
    objective = objective_for(benchmark, tuned, SYSTEM, floor)
    mapping, report = train_usefulness(
        tune_pools, extra, frozenset(held_out), objective, settings, seed
    )
    report = {
        **report,
        "config": dict(config),
        "held_out_families": len(held_out),
        "train_on": list(settings.train_on),
    }
    return mapping, report
