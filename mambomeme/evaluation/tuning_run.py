"""The tune stage's work: grid-search the search params on the dev benchmark -> selection.json.

Objective: evaluation/objective.py (0.55 Q + 0.15 E + 0.10 C + 0.10 S of the tuned system on
the dev partition, minus 1 below `tuning.min_hit10`). Each query's candidates are retrieved
once at the largest depth on the grid and re-ranked for every grid point (route lists do not
depend on weights, k or thresholds). The protocol check (dev only) runs before the benchmark's
queries or qrels are read. Then, when enabled, the route weights and the abstention threshold
are chosen together (evaluation/joint_abstention.py) and the usefulness model is fitted for the
frozen config (models/usefulness/fit.py); each adds its fields to selection.json.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mambomeme.config import (
    AbstentionTuning,
    TuningParams,
    UsefulnessParams,
    corpus_config,
    scored_benchmark_dir,
)
from mambomeme.evaluation.benchmark import Benchmark, load_benchmark
from mambomeme.evaluation.joint_abstention import Fitted, choose_with_abstention
from mambomeme.evaluation.objective import search_objective
from mambomeme.evaluation.tuning import add_to_selection, load_selection, search_params, tune
from mambomeme.models.abstention.train import examples, train_abstention
from mambomeme.models.usefulness.fit import fit_for_selection
from mambomeme.release.protocol import check_tuning_allowed, read_benchmark_meta
from mambomeme.search.engine import Candidates, Engine, EngineConfig
from mambomeme.search.results import Filters, SearchResponse

Progress = Callable[[str], None]
Withheld = frozenset[tuple[str, ...]]
CacheKey = tuple[tuple[str, ...], Filters]


@dataclass(frozen=True)
class _Tuner:
    """The dev benchmark, the engine and each query's candidates at the grid's largest depth."""

    params: Mapping[str, Any]
    bench_dir: Path
    benchmark: Benchmark
    engine: Engine
    system: str
    floor: float
    cache: Mapping[CacheKey, Candidates | None]
    progress: Progress

    def evaluate(self, config: Mapping[str, Any], withheld: Withheld = frozenset()) -> float:
        """The objective of one grid point; the queries in `withheld` get an empty list (the
        abstention model empties them)."""
        searched = {**self.params, "search": search_params(self.params["search"], config)}
        ranked = EngineConfig.from_params(searched)

        def search(cues: list[str], filters: Filters) -> SearchResponse:
            found = self.cache[(tuple(cues), filters)]
            results = tuple(self.engine.rank(found, 10, ranked)) if found is not None else ()
            if tuple(cues) in withheld:
                results = ()
            return SearchResponse("tune", self.system, tuple(cues), results)

        scored = search_objective(
            self.benchmark, search, self.system, self.engine.items, self.floor, str(self.bench_dir)
        )
        self.progress(
            f"  objective={scored.value:.4f} Q={scored.quality['Q']:.4f} "
            f"C={scored.quality['C']:.3f} Hit@10={scored.hit10:.3f}"
            f"{' (below the Hit@10 floor)' if scored.below_floor else ''} {dict(config)}"
        )
        return scored.value

    def fit_abstention(self, config: Mapping[str, Any], abstain: AbstentionTuning) -> Fitted:
        """The abstention model trained for `config` and the queries it withholds."""
        chosen = EngineConfig.from_params(
            {**self.params, "search": search_params(self.params["search"], config)}
        )
        exs = examples(
            self.engine,
            self.benchmark,
            lambda cues, filters: self.cache[(tuple(cues), Filters(**filters))],
            chosen,
        )
        model, report = train_abstention(exs, abstain.seed, abstain.folds, abstain.min_hit10)
        by_qid = {q.qid: tuple(q.all_cues) for q in self.benchmark.queries}
        return Fitted(model, report, frozenset(by_qid[q] for q in report["withheld"]))


def tune_corpus(params: Mapping[str, Any], progress: Progress) -> Path:
    """Tune the pipeline corpus of `params` on its scored dev benchmark; write and return
    <reports>/selection.json."""
    corpus, _ = corpus_config(dict(params))
    settings = params["tuning"]  # as it is, for the grid selection.json records
    tuning = TuningParams.from_params(settings)
    bench_dir = scored_benchmark_dir(dict(params))  # queries + the adjudicated judgement set
    check_tuning_allowed(read_benchmark_meta(bench_dir))  # before any query or qrel is read
    benchmark = load_benchmark(bench_dir)
    engine = Engine.open(Path("build") / corpus, params)
    system = tuning.system
    depth = max([int(params["search"]["depth"])] + [int(d) for d in tuning.axes.get("depth", [])])
    cache: dict[CacheKey, Candidates | None] = {}
    for query in benchmark.queries:
        key = (tuple(query.all_cues), Filters(**query.filter_dict))
        cache[key] = engine.retrieve(query.all_cues, Filters(**query.filter_dict), system, depth)
    tuner = _Tuner(
        params,
        bench_dir,
        benchmark,
        engine,
        system,
        tuning.min_hit10,
        cache,
        progress,
    )
    path = Path(params["base"]["reports"]) / "selection.json"
    grid = {**settings, "defaults": axis_defaults(params["search"], settings["axes"])}
    selection = tune(bench_dir, tuner.evaluate, grid, out=path, overwrite=True)
    progress(
        f"tune {corpus}: {len(selection.curve)} points, best Q={selection.objective:.4f} "
        f"at {dict(selection.config)}"
    )
    abstain = tuning.abstention
    if abstain is not None:
        joint = choose_with_abstention(
            selection.curve,
            abstain.candidates,
            tuner.evaluate,
            lambda config: tuner.fit_abstention(config, abstain),
        )
        add_to_selection(path, joint)
        progress(
            f"with abstention: {joint['config']} objective {joint['objective']:.4f} "
            f"(grid best without: {selection.objective:.4f}); abstention "
            f"{joint['abstention_report']['chosen']}"
        )
    usefulness = UsefulnessParams.from_params(params.get("usefulness")).training
    if usefulness is not None:
        frozen = load_selection(path)
        fields = fit_for_selection(
            params, usefulness, engine, benchmark, frozen.config, float(frozen.objective)
        )
        add_to_selection(path, fields)
        report = fields["usefulness_report"]
        progress(
            f"usefulness model: objective {report['objective_out_of_fold']:.4f} out of fold "
            f"vs {report['selection_objective']:.4f}: {'kept' if report['kept'] else 'not kept'}"
        )
    return path


def axis_defaults(search: Mapping[str, Any], axes: Iterable[str]) -> dict[str, Any]:
    """The params.yaml value of each dotted axis key (the tie-break's 'default-like' anchor);
    0.0 where the search block has no such key."""
    defaults: dict[str, Any] = {}
    for dotted in axes:
        node: Any = search
        for part in dotted.split("."):
            node = node.get(part, 0.0) if isinstance(node, dict) else 0.0
        defaults[dotted] = node
    return defaults
