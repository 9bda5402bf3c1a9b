"""params.yaml as each corpus pipeline sees it: nothing rewrites the file, the view is derived."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mambomeme.config import (
    DenseBuildParams,
    DenseParams,
    EvaluationParams,
    LexicalParams,
    RerankParams,
    SearchParams,
    TuningParams,
    UsefulnessParams,
    load_params,
)
from mambomeme.errors import MamboMemeError

ROOT = Path(__file__).resolve().parents[1]
PARAMS = ROOT / "params.yaml"


def test_each_corpus_gets_its_own_reports_and_benchmark() -> None:
    fixture = load_params(PARAMS)  # base.corpus
    assert fixture["base"]["corpus"] == "fixture"
    assert fixture["base"]["reports"] == "reports"
    assert fixture["evaluation"]["benchmark"] == "benchmarks/fixture"
    tenk = load_params(PARAMS, "memes-10k")
    assert tenk["base"]["corpus"] == "memes-10k"
    assert tenk["base"]["reports"] == "reports/memes-10k"
    assert tenk["evaluation"]["benchmark"] == "benchmarks/dev-v3"
    assert tenk["evaluation"]["benchmark_name"] == "dev-v3"
    # a corpus's own rerank entries win over the defaults; the rest are kept
    assert fixture["rerank"]["benchmark"] == "benchmarks/fixture"
    assert fixture["rerank"]["candidates"] == tenk["rerank"]["candidates"]
    assert tenk["rerank"]["benchmark"] == "benchmarks/dev-v1"


def test_the_file_holds_no_per_corpus_copy() -> None:
    raw = yaml.safe_load(PARAMS.read_text(encoding="utf-8"))
    assert set(raw["base"]) == {"seed", "corpus"}
    assert "benchmark" not in raw["evaluation"] and "benchmark_name" not in raw["evaluation"]
    for name, entry in raw["corpora"].items():
        assert {"input", "dev_benchmark", "reports"} <= set(entry), name
        assert (ROOT / "benchmarks" / entry["dev_benchmark"] / "queries.jsonl").is_file(), name


def test_unknown_corpus_and_wrong_input_are_refused(tmp_path: Path) -> None:
    with pytest.raises(MamboMemeError, match="'nope' is not defined"):
        load_params(PARAMS, "nope")
    raw = yaml.safe_load(PARAMS.read_text(encoding="utf-8"))
    raw["corpora"]["fixture"]["input"] = "elsewhere"
    bad = tmp_path / "params.yaml"
    bad.write_text(yaml.safe_dump(raw), encoding="utf-8")
    with pytest.raises(MamboMemeError, match="corpora.fixture.input"):
        load_params(bad)


def test_a_pipeline_build_gets_its_own_corpus_view(monkeypatch: pytest.MonkeyPatch) -> None:
    """`mambomeme search/run --build build/memes-10k` serves memes-10k's frozen selection
    (reports/memes-10k/selection.json), not the default corpus's."""
    monkeypatch.chdir(ROOT)
    assert load_params(PARAMS, build=Path("build/memes-10k"))["base"]["reports"] == (
        "reports/memes-10k"
    )
    assert load_params(PARAMS, build=ROOT / "build" / "fixture")["base"]["corpus"] == "fixture"
    elsewhere = load_params(PARAMS, build=Path("/tmp/some-release"))
    assert elsewhere["base"]["corpus"] == "fixture"  # not a pipeline build: base.corpus


def test_typed_sections_read_the_params_file_with_defaults_declared_once() -> None:
    """The typed sections read params.yaml as the stages see it; a missing key takes the one
    declared default, a missing required key is a typed error naming it."""
    params = load_params(ROOT / "params.yaml", corpus="fixture")
    rerank = RerankParams.from_params(params["rerank"])
    assert (rerank.candidates, rerank.fused_weight) == (
        params["rerank"]["candidates"],
        params["rerank"]["fused_weight"],
    )
    assert RerankParams.from_params(None) == RerankParams(30, 0.0, None)
    assert DenseParams.from_params({}) == DenseParams("cpu", 1)
    assert LexicalParams.from_params(params["lexical"]).weights["title"] == 8.0
    tuning = TuningParams.from_params(params["tuning"])
    assert tuning.abstention is not None and tuning.abstention.candidates == 12
    assert tuning.min_hit10 == params["tuning"]["min_hit10"] and tuning.system == "hybrid"
    off = TuningParams.from_params({"axes": {}, "abstention": {"enabled": False}})
    assert off.abstention is None and off.min_hit10 == 0.0 and off.refine_points == 2
    assert UsefulnessParams.from_params(params["usefulness"]).enabled is True
    assert UsefulnessParams.from_params(None).enabled is False
    with pytest.raises(MamboMemeError, match=r"tuning.abstention: key 'seed' missing"):
        TuningParams.from_params({"axes": {}, "abstention": {"enabled": True}})
    with pytest.raises(MamboMemeError, match=r"lexical: key 'weights' missing"):
        LexicalParams.from_params({})
    with pytest.raises(MamboMemeError, match="params rerank: must be a mapping"):
        RerankParams.from_params([30])  # type: ignore[arg-type]


def test_dense_build_params_take_the_corpus_overrides_and_its_ablations() -> None:
    params = {
        "dense": {"batch_size": 64, "device": "cpu", "cache_dir": ""},
        "search": {"ablations": {"no-title": ["title"], "no-tags": ["tags"]}},
    }
    plain = DenseBuildParams.from_params(params, {})
    assert (plain.shard_size, plain.document_encoder, plain.cache_dir) == (8192, "torch", None)
    assert plain.ablations == params["search"]["ablations"]
    own = DenseBuildParams.from_params(
        params, {"dense": {"batch_size": 8, "ablations": ["no-tags"], "document_encoder": "onnx"}}
    )
    assert (own.batch_size, own.document_encoder) == (8, "onnx")
    assert own.ablations == {"no-tags": ["tags"]}
    none = DenseBuildParams.from_params(params, {"dense": {"ablation_indexes": False}})
    assert none.ablations == {}
    with pytest.raises(MamboMemeError, match="dense: key 'device' missing"):
        DenseBuildParams.from_params({"dense": {"batch_size": 1}, "search": {"ablations": {}}}, {})


def test_search_params_read_the_block_with_its_defaults() -> None:
    params = load_params(PARAMS, "memes-10k")
    search = SearchParams.from_params(params["search"])
    assert (search.rrf_k, search.depth) == (float(params["search"]["rrf_k"]), 100)
    assert search.weight("no-such-route") == 0.0
    assert search.evidence("min_cosine") == params["search"]["min_cosine"]
    bare = SearchParams.from_params(
        {"rrf_k": 60, "depth": 10, "group_cap": 2, "route_weights": {"lexical": 1}}
    )
    assert (bare.term_cache_postings, bare.exact_first, bare.slang, bare.risk) == (
        0,
        False,
        False,
        None,
    )
    assert bare.weight("lexical") == 1.0 and bare.abstention is None
    with pytest.raises(MamboMemeError, match="search: key 'min_cosine' missing"):
        bare.evidence("min_cosine")
    with pytest.raises(MamboMemeError, match="search: key 'group_cap' missing"):
        SearchParams.from_params({"rrf_k": 60, "depth": 10, "route_weights": {}})


def test_usefulness_params_read_every_key_and_the_corpus_training_data() -> None:
    raw = yaml.safe_load(PARAMS.read_text(encoding="utf-8"))["usefulness"]
    fixture = UsefulnessParams.from_params(load_params(PARAMS, corpus="fixture")["usefulness"])
    training = fixture.training
    assert fixture.enabled is True and training is not None
    assert (training.pool, training.folds, training.seed) == (
        raw["pool"],
        raw["folds"],
        raw["seed"],
    )
    assert training.gbt.max_iter == raw["gbt"]["max_iter"]
    assert training.gbt.l2_regularization == raw["gbt"]["l2_regularization"]
    assert training.ranker.num_leaves == raw["ranker"]["num_leaves"]
    assert list(training.item_thresholds) == raw["item_thresholds"]
    assert list(training.empty_thresholds) == raw["empty_thresholds"]
    assert list(training.orders or ()) == raw["orders"]
    assert list(training.slang or ()) == raw["slang"]
    assert training.train_on == () and training.held_out == ()
    memes = load_params(PARAMS, corpus="memes-10k")["usefulness"]
    own = yaml.safe_load(PARAMS.read_text(encoding="utf-8"))["corpora"]["memes-10k"]["usefulness"]
    trained = UsefulnessParams.from_params(memes).training
    assert trained is not None and list(trained.train_on) == own["train_on"]
    assert list(trained.held_out) == own["held_out"]


def test_usefulness_training_keys_are_required_only_when_enabled() -> None:
    assert UsefulnessParams.from_params({"enabled": False, "pool": "x"}).training is None
    short = {"enabled": True, "pool": 60, "folds": 5, "seed": 1, "gbt": {}}
    with pytest.raises(MamboMemeError, match=r"usefulness.gbt: key 'max_iter' missing"):
        UsefulnessParams.from_params(short)
    with pytest.raises(MamboMemeError, match=r"usefulness: key 'seed' missing"):
        UsefulnessParams.from_params({"enabled": True, "pool": 60, "folds": 5})
    defaults = UsefulnessParams.from_params(
        {
            **short,
            "gbt": yaml.safe_load(PARAMS.read_text(encoding="utf-8"))["usefulness"]["gbt"],
            "ranker": {
                "n_estimators": 1,
                "learning_rate": 0.1,
                "num_leaves": 3,
                "min_child_samples": 1,
            },
            "item_thresholds": [0],
            "empty_thresholds": [0.5],
        }
    ).training
    assert defaults is not None and defaults.orders is None and defaults.slang is None
    assert defaults.item_thresholds == (0.0,) and defaults.train_on == ()


def test_evaluation_params_and_the_bootstrap_settings_they_give() -> None:
    from mambomeme.evaluation.evaluate import bootstrap_settings

    raw = yaml.safe_load(PARAMS.read_text(encoding="utf-8"))
    evaluation = EvaluationParams.from_params(raw["evaluation"])
    assert evaluation.warmups == raw["evaluation"]["warmups"]
    boot = raw["evaluation"]["bootstrap"]
    assert bootstrap_settings(evaluation, 1, None, None) == (boot["seed"], boot["resamples"])
    assert bootstrap_settings(evaluation, 1, 5, 7) == (5, 7)  # the command line wins
    defaults = EvaluationParams.from_params(None)
    assert defaults == EvaluationParams(10, None, 1000)
    assert bootstrap_settings(defaults, 42, None, None) == (42, 1000)  # base.seed
    with pytest.raises(MamboMemeError, match="no bootstrap seed"):
        bootstrap_settings(defaults, None, None, None)
    with pytest.raises(MamboMemeError, match="resamples must be >= 1"):
        bootstrap_settings(defaults, 1, None, 0)
    with pytest.raises(MamboMemeError, match="params evaluation.bootstrap: must be a mapping"):
        EvaluationParams.from_params({"bootstrap": [1]})


def test_a_corpus_own_dense_scan_reaches_serving_and_nothing_else_moves() -> None:
    """memes-full serves the sq8 scan (issue 36); the other corpora keep the exact scan, and a
    corpus's build-only dense keys never reach the serving view."""
    from mambomeme.index.dense_quantised import ScanConfig

    full = load_params(PARAMS, "memes-full")
    assert ScanConfig.from_params(full["dense"]).kind == "sq8"
    raw = yaml.safe_load(PARAMS.read_text(encoding="utf-8"))
    # only the scan keys come from the corpus: max_seq_length 128 is memes-full's build's own
    assert {k: v for k, v in full["dense"].items() if k != "scan"} == {
        k: v for k, v in raw["dense"].items() if k != "scan"
    }
    for name in ("fixture", "memes-10k"):
        assert load_params(PARAMS, name)["dense"] == raw["dense"], name
