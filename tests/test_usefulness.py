"""The per-item usefulness model (models/usefulness/) and the lists it cuts (search/usefulness.py),
the shipped selection's answers to concept, no-match, quote and chat-spelling queries."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mambomeme.config import GbtParams, RankerParams
from mambomeme.corpus.schema import SEARCH_FIELDS
from mambomeme.errors import MamboMemeError
from mambomeme.index.fts_query import content_tokens, tokenize
from mambomeme.models.usefulness.features import FEATURES, CandidateEvidence
from mambomeme.models.usefulness.model import UsefulnessModel
from mambomeme.models.usefulness.train import new_model, to_mapping
from mambomeme.search.engine import Engine
from mambomeme.search.evidence import item_tokens
from mambomeme.search.results import Result
from mambomeme.search.shipped import shipped
from mambomeme.search.usefulness import useful_list

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = GbtParams(
    max_iter=30, learning_rate=0.1, max_leaf_nodes=7, min_samples_leaf=5, l2_regularization=1.0
)


def _data(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(400, len(FEATURES)))
    y = (x[:, 1] + 0.5 * x[:, 6] + rng.normal(scale=0.5, size=400) > 0).astype(np.int64)
    return x, y


def _mapping() -> tuple[dict[str, Any], Any, np.ndarray]:
    x, y = _data()
    fitted = new_model(SETTINGS, 7).fit(x, y)
    return to_mapping(fitted, 0.05, 0.3, 40), fitted, x


def test_json_trees_predict_what_scikit_learn_predicts() -> None:
    mapping, fitted, x = _mapping()
    model = UsefulnessModel.from_mapping(mapping)
    assert np.allclose(model.probability(x), fitted.predict_proba(x)[:, 1], atol=1e-12)
    assert (model.item_threshold, model.empty_threshold, model.pool) == (0.05, 0.3, 40)


def test_training_is_deterministic() -> None:
    assert _mapping()[0] == _mapping()[0]
    model = UsefulnessModel.from_mapping(_mapping()[0])
    x = _data(1)[0]
    assert np.array_equal(model.probability(x), model.probability(x))


@pytest.mark.parametrize(
    "change",
    [
        {"version": "usefulness-gbt-0"},
        {"feature_version": "usefulness-features-0"},
        {"features": list(reversed(FEATURES))},
        {"sha256": "0" * 64},
        {"trees": []},
    ],
)
def test_a_mismatched_model_is_refused(change: dict[str, Any]) -> None:
    mapping = {**_mapping()[0], **change}
    with pytest.raises(MamboMemeError, match="usefulness model"):
        UsefulnessModel.from_mapping(mapping)


def test_an_edited_tree_is_refused() -> None:
    mapping = copy.deepcopy(_mapping()[0])
    mapping["trees"][0]["value"][-1] += 1.0
    with pytest.raises(MamboMemeError, match="sha256"):
        UsefulnessModel.from_mapping(mapping)


def _result(item: str) -> Result:
    return Result(1, item, item, "", "meme", "", "", "", 0.0, (), ())


def _evidence(tier: int) -> CandidateEvidence:
    return CandidateEvidence(1, {}, {}, 0.0, 0.0, 0.0, False, False, tier, 1, False)


def test_useful_list_exact_first_then_by_probability_and_cut() -> None:
    results = [_result(name) for name in "abcd"]
    evidence = [_evidence(3), _evidence(3), _evidence(1), _evidence(3)]
    p = np.array([0.9, 0.01, 0.2, 0.6])
    shown, reason = useful_list(results, evidence, p, 0.05, 0.5, 10)
    assert [r.item_id for r in shown] == ["c", "a", "d"]  # exact c, then by P; b cut
    assert [r.rank for r in shown] == [1, 2, 3] and reason == ""
    assert [r.item_id for r in useful_list(results, evidence, p, 0.05, 0.5, 2)[0]] == ["c", "a"]


def test_useful_list_is_empty_only_without_a_good_or_exact_candidate() -> None:
    results = [_result("a"), _result("b")]
    p = np.array([0.2, 0.1])
    shown, reason = useful_list(results, [_evidence(3), _evidence(3)], p, 0.0, 0.3, 10)
    assert shown == [] and "no good match" in reason
    shown, _ = useful_list(results, [_evidence(3), _evidence(0)], p, 0.0, 0.3, 10)
    assert [r.item_id for r in shown] == ["b", "a"]  # a named template keeps the list


# -- the engine with a usefulness model trained on the fixture's own benchmark ----------


@pytest.fixture(scope="module")
def useful_engine(fixture_build: Path, params: dict[str, Any]) -> Engine:
    from mambomeme.evaluation.benchmark import load_benchmark
    from mambomeme.models.usefulness.train import collect, training_rows

    base = Engine.open(fixture_build, params)
    benchmark = load_benchmark(ROOT / "reports" / "benchmark")
    pools = collect(base, benchmark, "fixture", "hybrid", base.config, 40)
    x, y, _ = training_rows(pools, frozenset())
    mapping = to_mapping(new_model(SETTINGS, 3).fit(x, y), 0.0, 0.2, 40)
    served = copy.deepcopy(params)
    served["search"]["usefulness"] = mapping
    return Engine.open(fixture_build, served)


def test_the_usefulness_path_orders_and_cuts(useful_engine: Engine) -> None:
    found = useful_engine.search(["john cena"], 10, None, "hybrid")
    assert found.results and found.results[0].item_id == "fx:tpl-john-cena"  # named: first
    assert "usefulness" in found.timings_ms
    empty = useful_engine.search(["zebra accordion thermodynamics"], 10, None, "hybrid")
    assert empty.results == () and empty.empty_reason


# -- the shipped selection of the fixture (reports/selection.json) ----------------------


@pytest.fixture(scope="module")
def served(fixture_build: Path, params: dict[str, Any]) -> tuple[Engine, str]:
    found = shipped(params, fixture_build, ROOT / "reports")
    return Engine.open(fixture_build, found.params), found.system


def _ids(served: tuple[Engine, str], query: str, n: int = 10) -> list[str]:
    engine, system = served
    return [r.item_id for r in engine.search([query], 10, None, system).results][:n]


def test_a_concept_query_sharing_no_word_finds_its_target(served: tuple[Engine, str]) -> None:
    query, target = "feline that hates sunrise cheerfulness", "fx:grumpy-cat-01"
    engine, _ = served
    words = set(content_tokens(tokenize(query)))
    item = engine.items.item(engine.items.row_of[target])
    assert not words & item_tokens(item, SEARCH_FIELDS)  # no word in common, knowledge included
    assert target in _ids(served, query, 3)


def test_a_no_match_query_gets_an_empty_list(served: tuple[Engine, str]) -> None:
    engine, system = served
    found = engine.search(["zebra accordion thermodynamics"], 10, None, system)
    assert found.results == () and found.empty_reason


def test_a_quote_returns_every_carrier(served: tuple[Engine, str]) -> None:
    carriers = {"fx:john-cena-04", "fx:john-cena-05", "fx:john-cena-15"}
    assert carriers <= set(_ids(served, "are you sure about that"))


def test_a_misremembered_quote_finds_its_carrier_first(served: tuple[Engine, str]) -> None:
    # "the wifi signal in the basement": one word changed (basement), one dropped (the)
    assert _ids(served, "wifi signal in the cellar", 1) == ["fx:john-cena-14"]


@pytest.mark.parametrize("query", ["u cant c me", "jon sena invisibl"])
def test_chat_spelling_finds_john_cena(served: tuple[Engine, str], query: str) -> None:
    top = _ids(served, query, 3)
    assert len(top) == 3 and all(item.startswith("fx:") and "john-cena" in item for item in top)


def test_the_slang_rewrite_is_reported(served: tuple[Engine, str]) -> None:
    engine, system = served
    found = engine.search(["u cant c me"], 10, None, system)
    assert found.added_cues == ("you can't see me",)
    assert dataclasses.replace(found, added_cues=()).added_cues == ()


def test_a_risky_candidate_loses_to_a_nearly_as_useful_safe_one() -> None:
    from mambomeme.search.usefulness import RiskRule

    results = [_result(name) for name in "abc"]
    evidence = [_evidence(3), _evidence(3), _evidence(3)]
    p = np.array([0.80, 0.75, 0.40])
    risk = np.array([0.15, 0.0, 0.0])  # a is risky (below any mask threshold, above low)
    rule = RiskRule(low=0.1, margin=0.1)
    shown, _ = useful_list(results, evidence, p, 0.0, 0.2, 10, risk, rule)
    assert [r.item_id for r in shown] == ["b", "a", "c"]  # b nearly as useful: it goes first
    far = RiskRule(low=0.1, margin=0.01)
    assert [r.item_id for r in useful_list(results, evidence, p, 0.0, 0.2, 10, risk, far)[0]] == [
        "a",
        "b",
        "c",
    ]


def test_risky_candidates_never_fill_a_list_tail() -> None:
    from mambomeme.search.usefulness import RiskRule

    results = [_result(name) for name in "abcd"]
    evidence = [_evidence(3)] * 4
    p = np.array([0.9, 0.8, 0.3, 0.2])
    risk = np.array([0.0, 0.0, 0.5, 0.5])
    shown, _ = useful_list(results, evidence, p, 0.0, 0.2, 10, risk, RiskRule(0.1, 0.1))
    assert [r.item_id for r in shown] == ["a", "b"]  # the list ends instead


def test_a_named_template_keeps_its_place_however_risky() -> None:
    from mambomeme.search.usefulness import RiskRule

    results = [_result("tpl"), _result("b")]
    evidence = [_evidence(0), _evidence(3)]
    p = np.array([0.3, 0.9])
    risk = np.array([0.9, 0.0])
    shown, _ = useful_list(results, evidence, p, 0.0, 0.2, 10, risk, RiskRule(0.1, 0.5))
    assert [r.item_id for r in shown] == ["tpl", "b"]


def _ranker_mapping() -> tuple[dict[str, Any], Any, np.ndarray]:
    from mambomeme.models.usefulness.train import new_ranker

    x, y = _data(2)
    grades = np.clip((x[:, 1] * 1.5 + 1.5).round(), 0, 3).astype(int)
    ranker = new_ranker(
        RankerParams(n_estimators=20, learning_rate=0.1, num_leaves=7, min_child_samples=5), 3
    ).fit(x, grades, group=[40] * 10)
    fitted = new_model(SETTINGS, 7).fit(x, y)
    return to_mapping(fitted, 0.0, 0.3, 40, "ranker", ranker), ranker, x


def test_the_ranker_json_trees_score_what_lightgbm_scores() -> None:
    mapping, ranker, x = _ranker_mapping()
    model = UsefulnessModel.from_mapping(mapping)
    assert model.order == "ranker"
    assert np.allclose(model.order_scores(x, model.probability(x)), ranker.predict(x), atol=1e-9)
    assert _ranker_mapping()[0] == mapping  # deterministic


def test_a_ranker_order_without_its_trees_is_refused() -> None:
    mapping = _ranker_mapping()[0]
    for broken in ({**mapping, "ranker_trees": []}, {**mapping, "ranker_sha256": "0" * 64}):
        with pytest.raises(MamboMemeError, match="usefulness model"):
            UsefulnessModel.from_mapping(broken)
    with pytest.raises(MamboMemeError, match="order"):
        UsefulnessModel.from_mapping({**mapping, "order": "random"})


def test_the_fused_order_keeps_the_fused_list() -> None:
    model = UsefulnessModel.from_mapping({**_mapping()[0], "order": "fused"})
    x = _data(3)[0][:5]
    assert list(model.order_scores(x, model.probability(x))) == [0.0, -1.0, -2.0, -3.0, -4.0]


def test_explain_names_the_chat_spelling_cue(
    fixture_build: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mambomeme.cli import main

    argv = ["search", "u cant c me", "--explain", "--limit", "3", "--build", str(fixture_build)]
    code = main([*argv, "--params", str(ROOT / "params.yaml")])
    out = capsys.readouterr().out
    assert code == 0
    assert 'c1 "you can\'t see me" (chat spelling read as English)' in out
    assert "c1:lexical#" in out  # the rewritten cue's own route hits


def test_on_the_fixture_a_risky_item_never_ends_a_list_and_a_named_template_stays_first(
    useful_engine: Engine,
) -> None:
    from mambomeme.search.usefulness import RiskRule

    plain = useful_engine.search(["wrestler waving hand"], 10, None, "hybrid").results
    assert len(plain) >= 3
    last = plain[-1].item_id
    risky = useful_engine.with_config(
        dataclasses.replace(useful_engine.config, risk=RiskRule(low=0.5, margin=0.1))
    )
    items = risky.items
    before = {i: float(items.risk[items.row_of[i]]) for i in (last, "fx:tpl-john-cena")}
    items.set_risk({last: 0.9, "fx:tpl-john-cena": 0.9})
    try:
        shown = [
            r.item_id for r in risky.search(["wrestler waving hand"], 10, None, "hybrid").results
        ]
        assert shown and shown[-1] != last and last not in shown[len(plain) - 1 :]
        named = risky.search(["john cena"], 10, None, "hybrid").results
        assert named[0].item_id == "fx:tpl-john-cena"  # exact: keeps its place however risky
    finally:
        items.set_risk(before)


# -- the pool's cheap evidence equals what the shown list gets (issue 36's hot path) ---------


def test_shown_results_carry_the_fields_and_snippets_the_fused_list_gives(
    useful_engine: Engine,
) -> None:
    query = ["wrestler waving hand"]
    shown = useful_engine.search(query, 10, None, "hybrid").results
    candidates = useful_engine.retrieve(query, None, "hybrid", 100)
    assert shown and candidates is not None
    pool = useful_engine.permissive_pool(candidates, 40)
    assert all(r.matched_fields == () for r in pool)  # the pool makes no snippets
    plain = {
        r.item_id: r.matched_fields
        for r in useful_engine.rank(candidates, 100, useful_engine.config)
    }
    for result in shown:
        assert result.matched_fields, result.item_id
        if result.item_id in plain:
            assert result.matched_fields == plain[result.item_id]


def test_field_names_and_folded_coverage_equal_their_full_forms(engine: Engine) -> None:
    from mambomeme.search.evidence import coverage, covered, spellings
    from mambomeme.search.present import matched_field_names, matched_fields

    fixes = {"cena": ["sena"], "invisble": ["invisible", "visible"]}
    cues = [["john", "cena"], ["invisble", "wrestler", "Über"], ["nothing", "here"]]
    for item_id in engine.items.ids:
        item = engine.items[item_id]
        present = item_tokens(item, SEARCH_FIELDS)
        for tokens in cues:
            full = {m.field for m in matched_fields(item, SEARCH_FIELDS, tokens)}
            assert matched_field_names(item, SEARCH_FIELDS, tokens) == full
            flags = covered(spellings(tokens, fixes), present)
            assert sum(flags) / len(tokens) == coverage(tokens, fixes, present)


def test_a_forest_predicts_nothing_for_no_rows() -> None:
    model = UsefulnessModel.from_mapping(_mapping()[0])
    assert model.trees.predict(np.zeros((0, len(FEATURES)))).shape == (0,)
