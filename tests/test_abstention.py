"""Abstention as a calibrated decision (models/abstention/):
trained on the fixture benchmark's judgements, deterministic, refused when its version or
features differ, and applied by the engine (a no-match query gets an honest empty list)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from mambomeme.errors import MamboMemeError
from mambomeme.evaluation.benchmark import load_benchmark
from mambomeme.models.abstention.model import AbstentionModel
from mambomeme.models.abstention.train import examples, outcome, train_abstention
from mambomeme.search.engine import Engine, EngineConfig
from mambomeme.search.results import Filters

ROOT = Path(__file__).resolve().parents[1]
SYSTEM = "hybrid"
# weak evidence rules, so that no-match queries get lists too and there is something to learn
WEAK = {"min_cosine": 0.1, "min_lexical_coverage": 0.1, "min_typo_coverage": 0.1}


@pytest.fixture(scope="module")
def trained(engine: Any, params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    benchmark = load_benchmark(ROOT / "reports" / "benchmark")
    config = EngineConfig.from_params({**params, "search": {**params["search"], **WEAK}})

    def found(cues: Any, filters: Any) -> Any:
        return engine.retrieve(list(cues), Filters(**filters), SYSTEM, config.depth)

    exs = examples(engine, benchmark, found, config)
    assert {e.good for e in exs if e.shown} == {True, False}
    return train_abstention(exs, seed=3, folds=5, min_hit10=0.9), {"exs": exs}


def test_training_is_deterministic_and_keeps_hit10(trained: Any) -> None:
    (model, report), data = trained
    again, _ = train_abstention(data["exs"], seed=3, folds=5, min_hit10=0.9)
    assert json.dumps(model, sort_keys=True) == json.dumps(again, sort_keys=True)
    assert report["chosen"]["hit10"] >= 0.9 or report["chosen"] == report["without"]
    assert report["chosen"]["C"] >= report["without"]["C"]
    keep_all = outcome(data["exs"], [True] * len(data["exs"]))  # type: ignore[arg-type]
    assert keep_all[0] == report["without"]["hit10"]


def test_mismatched_model_is_refused(trained: Any) -> None:
    (model, _), _ = trained
    AbstentionModel.from_mapping(model)
    with pytest.raises(MamboMemeError, match="abstention"):
        AbstentionModel.from_mapping({**model, "version": "abstain-lr-0"})
    with pytest.raises(MamboMemeError, match="abstention"):
        AbstentionModel.from_mapping({**model, "features": model["features"][:-1]})


def test_engine_abstains_on_no_match_and_answers_the_rest(
    fixture_build: Path, params: dict[str, Any], trained: Any
) -> None:
    (model, _), _ = trained
    strict = {**model, "threshold": 0.5}
    search = {**params["search"], **WEAK, "abstention": strict}
    engine = Engine.open(fixture_build, {**params, "search": search})
    engine.load(SYSTEM)
    try:
        answer = engine.search(["john cena"], system=SYSTEM)
        assert answer.results, answer.empty_reason
        empty = engine.search(["submarine sonar"], system=SYSTEM)
        assert not empty.results
        plain = dataclasses.replace(engine.config, abstention=None)
        found = engine.retrieve(["submarine sonar"], None, SYSTEM, plain.depth)
        shown = engine.rank(found, 10, plain) if found else []
        if shown:  # the evidence rule alone would have shown something: abstention removed it
            assert empty.empty_reason.startswith("abstained")
    finally:
        engine.close()
