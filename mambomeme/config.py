"""params.yaml loading: all tunables live there; code reads them through this one function,
and the typed sections below (each block's keys and defaults, declared once)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from mambomeme.errors import MamboMemeError

DEFAULT_PARAMS = Path("params.yaml")
# the keys of a corpus's own `dense` block that serving reads (index/dense_quantised.ScanConfig);
# its other keys (max_seq_length, memes_without, ablations) shape the build (DenseBuildParams)
DENSE_SCAN_KEYS = ("scan", "rescore_factor", "scan_threads")


def load_params(
    path: Path = DEFAULT_PARAMS, corpus: str | None = None, build: Path | None = None
) -> dict[str, Any]:
    """Read params.yaml as the pipeline of `corpus` sees it: by default the corpus whose
    pipeline made `build` (build/<name>), else base.corpus.

    Each entry of `corpora` is one DVC pipeline (dvc.yaml `foreach`). The per-corpus values
    every stage reads are set here from `corpora.<corpus>` and never written in the file:
    base.corpus, base.reports (its `reports`), evaluation.benchmark_name (its `dev_benchmark`) and
    evaluation.benchmark (benchmarks/<that name>). A missing or non-mapping file, or an unknown
    corpus, is a clear error."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise MamboMemeError(f"cannot read params file {path}: {exc.strerror}") from None
    params = yaml.safe_load(text)
    if not isinstance(params, dict):
        raise MamboMemeError(f"params file {path} is not a mapping")
    if "corpora" not in params:
        return params
    if corpus is None and build is not None:
        corpus = built_by(params, build)
    return corpus_view(params, corpus)


def built_by(params: dict[str, Any], build: Path) -> str | None:
    """The corpus whose pipeline writes `build` (build/<name>), or None for any other folder
    (a release, a user's library, a copy elsewhere)."""
    for name in params.get("corpora", {}):
        if (Path("build") / name).resolve() == Path(build).resolve():
            return str(name)
    return None


def corpus_view(params: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    """A copy of `params` set up for corpus `name` (see load_params)."""
    corpus, config = corpus_config(params, name)
    for key in ("reports", "dev_benchmark"):
        if key not in config:
            raise MamboMemeError(f"params corpora.{corpus} has no {key!r}")
    source = config.get("path", config.get("root"))
    if "input" in config and Path(str(config["input"])) != Path(str(source)):
        raise MamboMemeError(
            f"params corpora.{corpus}.input is {config['input']!r} but its source reads "
            f"{source!r}: DVC would watch the wrong path"
        )
    view = dict(params)
    view["base"] = dict(params.get("base") or {}, corpus=corpus, reports=str(config["reports"]))
    bench = str(config["dev_benchmark"])
    view["evaluation"] = dict(
        params.get("evaluation") or {}, benchmark=f"benchmarks/{bench}", benchmark_name=bench
    )
    useful = config.get("usefulness")  # a corpus's own usefulness training data
    if useful is not None:
        view["usefulness"] = dict(params.get("usefulness") or {}, **useful)
    rerank = config.get("rerank")  # a corpus's own reranker settings over the defaults
    if rerank is not None:
        view["rerank"] = dict(params.get("rerank") or {}, **rerank)
    own_dense = config.get("dense") or {}  # a corpus's own dense scan (sq8 at memes-full)
    scan = {key: own_dense[key] for key in DENSE_SCAN_KEYS if key in own_dense}
    if scan:
        view["dense"] = dict(params.get("dense") or {}, **scan)
    return view


def corpus_config(params: dict[str, Any], name: str | None = None) -> tuple[str, dict[str, Any]]:
    """The named corpus (default: base.corpus) and its source config."""
    corpus = name or str(params["base"]["corpus"])
    corpora = params.get("corpora", {})
    if corpus not in corpora:
        raise MamboMemeError(
            f"corpus {corpus!r} is not defined in params corpora: {sorted(corpora)}"
        )
    config = dict(corpora[corpus])
    # ingest.safety (e.g. profanity_threshold) is the default; a corpus's own "safety" wins
    defaults = (params.get("ingest") or {}).get("safety")
    if defaults is not None and "safety" not in config:
        config["safety"] = dict(defaults)
    return corpus, config


def build_dir(params: dict[str, Any], name: str | None = None) -> Path:
    corpus, _ = corpus_config(params, name)
    return Path("build") / corpus


def evaluation_systems(params: dict[str, Any]) -> list[str]:
    """The systems scored on the selected corpus: its `systems`, else evaluation.systems."""
    _, config = corpus_config(params)
    return [str(s) for s in config.get("systems", params["evaluation"]["systems"])]


def scored_benchmark_dir(params: dict[str, Any]) -> Path:
    """The benchmark the pipeline scores: <base.reports>/benchmark/, assembled by the adjudicate
    stage from evaluation.benchmark's queries and its newest verified judgement set."""
    return Path(str(params["base"]["reports"])) / "benchmark"


def check_benchmark_dir(params: dict[str, Any]) -> Path:
    """The locked check side of the dev benchmark (evaluation/split.py): <base.reports>/
    benchmark-check/, written by the adjudicate stage beside the tune side and read only by
    the checks stage, never by tuning."""
    return Path(str(params["base"]["reports"])) / "benchmark-check"


# Typed params sections: each block's keys this code reads, with their defaults declared here
# once. `from_params` takes the block itself (params["<name>"], None when the file has none).


def _block(section: Mapping[str, Any] | None, name: str) -> Mapping[str, Any]:
    if section is None:
        return {}
    if not isinstance(section, Mapping):
        raise MamboMemeError(f"params {name}: must be a mapping, got {type(section).__name__}")
    return section


def _required(section: Mapping[str, Any], name: str, key: str) -> Any:
    if key not in section:
        raise MamboMemeError(f"params {name}: key {key!r} missing")
    return section[key]


@dataclass(frozen=True)
class RerankParams:
    """`rerank`, serving side: how the cross-encoder re-orders a hybrid list."""

    candidates: int = 30  # fused results of the main cue the cross-encoder re-orders
    fused_weight: float = 0.0  # RRF weight of the fused order beside the reranker's (weight 1)
    out: Path | None = None  # a trained model elsewhere than <build>/reranker

    @classmethod
    def from_params(cls, section: Mapping[str, Any] | None) -> RerankParams:
        s = _block(section, "rerank")
        return cls(
            candidates=int(s.get("candidates", cls.candidates)),
            fused_weight=float(s.get("fused_weight", cls.fused_weight)),
            out=Path(s["out"]) if s.get("out") else None,
        )


@dataclass(frozen=True)
class DenseParams:
    """`dense`, search side: where and with how many threads queries are encoded."""

    device: str = "cpu"
    query_threads: int = 1

    @classmethod
    def from_params(cls, section: Mapping[str, Any] | None) -> DenseParams:
        s = _block(section, "dense")
        return cls(
            device=str(s.get("device", cls.device)),
            query_threads=int(s.get("query_threads", cls.query_threads)),
        )


@dataclass(frozen=True)
class LexicalParams:
    """`lexical`: the bm25 weight of each FTS5 column (schema.SEARCH_FIELDS names)."""

    weights: Mapping[str, float]

    @classmethod
    def from_params(cls, section: Mapping[str, Any] | None) -> LexicalParams:
        s = _block(section, "lexical")
        weights = _required(s, "lexical", "weights")
        if not isinstance(weights, Mapping):
            raise MamboMemeError("params lexical.weights: must map each column to a weight")
        return cls(weights=dict(weights))


@dataclass(frozen=True)
class AbstentionTuning:
    """`tuning.abstention`: the abstention model trained with the route weights (seeds/003)."""

    seed: int
    folds: int  # GroupKFold by query family
    min_hit10: float  # the threshold maximises C keeping answerable Hit@10 >= this
    candidates: int = 12  # route-weight combinations (their best grid points) tried


@dataclass(frozen=True)
class TuningParams:
    """`tuning`: the tune stage's system, Hit@10 floor and abstention; the grid itself
    (axes, refine_points, refine_rounds, tie_tolerance) is read and checked by
    evaluation/tuning.py from the same block, which selection.json records as it is."""

    axes: Mapping[str, Any]
    system: str = "hybrid"
    min_hit10: float = 0.0  # a point below this answerable Hit@10 loses 1.0 in the objective
    abstention: AbstentionTuning | None = None  # None: disabled
    refine_points: int = 2
    refine_rounds: int = 1
    tie_tolerance: float = 0.0

    @classmethod
    def from_params(cls, section: Mapping[str, Any] | None) -> TuningParams:
        s = _block(section, "tuning")
        raw = _block(s.get("abstention"), "tuning.abstention")
        abstention = None
        if raw.get("enabled"):
            where = "tuning.abstention"
            abstention = AbstentionTuning(
                seed=int(_required(raw, where, "seed")),
                folds=int(_required(raw, where, "folds")),
                min_hit10=float(_required(raw, where, "min_hit10")),
                candidates=int(raw.get("candidates", AbstentionTuning.candidates)),
            )
        return cls(
            axes=_block(_required(s, "tuning", "axes"), "tuning.axes"),
            system=str(s.get("system", cls.system)),
            min_hit10=float(s.get("min_hit10", cls.min_hit10)),
            abstention=abstention,
            refine_points=s.get("refine_points", cls.refine_points),
            refine_rounds=s.get("refine_rounds", cls.refine_rounds),
            tie_tolerance=s.get("tie_tolerance", cls.tie_tolerance),
        )


@dataclass(frozen=True)
class EvaluationParams:
    """`evaluation`, run and score side: untimed warm-up searches before a timed run, and the
    paired bootstrap (seed None: base.seed, see evaluate.bootstrap_settings)."""

    warmups: int = 10  # so the first timed query does not pay for loading the model
    bootstrap_seed: int | None = None
    bootstrap_resamples: int = 1000

    @classmethod
    def from_params(cls, section: Mapping[str, Any] | None) -> EvaluationParams:
        s = _block(section, "evaluation")
        boot = _block(s.get("bootstrap") or None, "evaluation.bootstrap")
        seed = boot.get("seed")
        return cls(
            warmups=int(s.get("warmups", cls.warmups)),
            bootstrap_seed=None if seed is None else int(seed),
            bootstrap_resamples=int(boot.get("resamples", cls.bootstrap_resamples)),
        )


@dataclass(frozen=True)
class GbtParams:
    """`usefulness.gbt`: scikit-learn HistGradientBoostingClassifier settings for P(useful)."""

    max_iter: int
    learning_rate: float
    max_leaf_nodes: int
    min_samples_leaf: int
    l2_regularization: float

    @classmethod
    def from_params(cls, section: Mapping[str, Any] | None) -> GbtParams:
        s, where = _block(section, "usefulness.gbt"), "usefulness.gbt"
        return cls(
            max_iter=int(_required(s, where, "max_iter")),
            learning_rate=float(_required(s, where, "learning_rate")),
            max_leaf_nodes=int(_required(s, where, "max_leaf_nodes")),
            min_samples_leaf=int(_required(s, where, "min_samples_leaf")),
            l2_regularization=float(_required(s, where, "l2_regularization")),
        )


@dataclass(frozen=True)
class RankerParams:
    """`usefulness.ranker`: LightGBM LambdaMART settings (the learned fusion)."""

    n_estimators: int
    learning_rate: float
    num_leaves: int
    min_child_samples: int

    @classmethod
    def from_params(cls, section: Mapping[str, Any] | None) -> RankerParams:
        s, where = _block(section, "usefulness.ranker"), "usefulness.ranker"
        return cls(
            n_estimators=int(_required(s, where, "n_estimators")),
            learning_rate=float(_required(s, where, "learning_rate")),
            num_leaves=int(_required(s, where, "num_leaves")),
            min_child_samples=int(_required(s, where, "min_child_samples")),
        )


@dataclass(frozen=True)
class UsefulnessTraining:
    """`usefulness` training settings (models/usefulness/fit.py and train.py), the corpus's own
    `usefulness` block (train_on, held_out) over them."""

    pool: int  # candidates per query the model sees
    folds: int  # GroupKFold by query family
    seed: int
    gbt: GbtParams
    ranker: RankerParams
    item_thresholds: tuple[float, ...]
    empty_thresholds: tuple[float, ...]
    orders: tuple[str, ...] | None = None  # what may order a list; None: every order
    slang: tuple[bool, ...] | None = None  # search.slang values to train under; None: search's
    train_on: tuple[str, ...] = ()  # earlier dev benchmarks whose judgements add rows
    held_out: tuple[str, ...] = ()  # "benchmarks/B@check" entries whose families never train

    @classmethod
    def from_params(cls, section: Mapping[str, Any] | None) -> UsefulnessTraining:
        s, where = _block(section, "usefulness"), "usefulness"
        orders, slang = s.get("orders"), s.get("slang")
        return cls(
            pool=int(_required(s, where, "pool")),
            folds=int(_required(s, where, "folds")),
            seed=int(_required(s, where, "seed")),
            gbt=GbtParams.from_params(_required(s, where, "gbt")),
            ranker=RankerParams.from_params(_required(s, where, "ranker")),
            item_thresholds=tuple(float(v) for v in _required(s, where, "item_thresholds")),
            empty_thresholds=tuple(float(v) for v in _required(s, where, "empty_thresholds")),
            orders=None if orders is None else tuple(str(o) for o in orders),
            slang=None if slang is None else tuple(bool(v) for v in slang),
            train_on=tuple(str(n) for n in s.get("train_on") or ()),
            held_out=tuple(str(n) for n in s.get("held_out") or ()),
        )


@dataclass(frozen=True)
class UsefulnessParams:
    """`usefulness`: whether the tune stage fits the per-item usefulness model, and how
    (`training`, read only when enabled: its keys are required then)."""

    enabled: bool = False
    training: UsefulnessTraining | None = None

    @classmethod
    def from_params(cls, section: Mapping[str, Any] | None) -> UsefulnessParams:
        s = _block(section, "usefulness")
        enabled = bool(s.get("enabled", cls.enabled))
        return cls(enabled, UsefulnessTraining.from_params(s) if enabled else None)


@dataclass(frozen=True)
class DenseBuildParams:
    """`dense`, build side (stage index_dense), with the corpus's own `dense` entries over it:
    how documents are embedded and which search.ablations get a matrix of their own."""

    batch_size: int
    device: str
    ablations: Mapping[str, Any]  # search.ablations embedded (name -> fields left out)
    memes_without: Any = ()  # fields left out of meme documents only
    max_seq_length: Any = None
    cache_dir: Path | None = None  # resumable embedding cache; None = none
    shard_size: int = 8192  # documents embedded and saved per cache shard
    document_encoder: str = "torch"  # torch, or onnx

    @classmethod
    def from_params(cls, params: Mapping[str, Any], corpus: Mapping[str, Any]) -> DenseBuildParams:
        """`params` as a stage sees it; `corpus` its corpora.<name> entry."""
        dense = {**_block(params.get("dense"), "dense"), **corpus.get("dense", {})}
        search = _block(params.get("search"), "search")
        every = dense.get("ablation_indexes", True)
        ablations = _required(search, "search", "ablations") if every else {}
        if "ablations" in dense:  # a corpus may embed only some ablations (CPU time)
            ablations = {name: ablations[name] for name in dense["ablations"]}
        return cls(
            batch_size=int(_required(dense, "dense", "batch_size")),
            device=str(_required(dense, "dense", "device")),
            ablations=ablations,
            memes_without=dense.get("memes_without", cls.memes_without),
            max_seq_length=dense.get("max_seq_length", cls.max_seq_length),
            cache_dir=Path(dense["cache_dir"]) if dense.get("cache_dir") else None,
            shard_size=int(dense.get("shard_size", cls.shard_size)),
            document_encoder=str(dense.get("document_encoder", cls.document_encoder)),
        )


@dataclass(frozen=True)
class SearchParams:
    """`search`: fusion, depth, thresholds and the frozen models a selection carries. Route
    names and their evidence keys belong to search/routes (`weight`, `evidence` read them)."""

    rrf_k: float
    depth: int  # eligible candidates per cue x route
    group_cap: int
    route_weights: Mapping[str, Any]  # route -> weight; a route not named weighs 0
    block: Mapping[str, Any]  # the whole block, for each route's evidence key (min_cosine, ...)
    term_cache_postings: int = 0  # per-token bm25 lists cached, in rows (0 = off)
    ablations: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    exact_first: bool = False  # exact identity matches ranked first
    slang: bool = False  # a cue in chat spelling adds its English rewrite
    risk: tuple[float, float] | None = None  # (low, margin): risk-aware lists
    abstention: Mapping[str, Any] | None = None  # a frozen selection's abstention model
    usefulness: Mapping[str, Any] | None = None  # a frozen selection's usefulness model

    def weight(self, route: str) -> float:
        return float(self.route_weights.get(route, 0.0))

    def evidence(self, key: str) -> float:
        """The minimum evidence a route's list needs (search.<key>)."""
        return float(_required(self.block, "search", key))

    @classmethod
    def from_params(cls, section: Mapping[str, Any] | None) -> SearchParams:
        s = _block(section, "search")
        risk = s.get("risk")
        return cls(
            rrf_k=float(_required(s, "search", "rrf_k")),
            depth=int(_required(s, "search", "depth")),
            group_cap=int(_required(s, "search", "group_cap")),
            route_weights=_block(_required(s, "search", "route_weights"), "search.route_weights"),
            block=s,
            term_cache_postings=int(s.get("term_cache_postings", cls.term_cache_postings)),
            ablations={k: tuple(v) for k, v in s.get("ablations", {}).items()},
            exact_first=bool(s.get("exact_first", cls.exact_first)),
            slang=bool(s.get("slang", cls.slang)),
            risk=(float(risk["low"]), float(risk["margin"])) if risk else None,
            abstention=s.get("abstention") or None,
            usefulness=s.get("usefulness") or None,
        )
