"""DVC stage tune: grid-search the hybrid's search params on the dev benchmark -> selection.json.

Objective: the quality part of MMTS-Search-v1, 0.55 Q + 0.15 E + 0.10 C + 0.10 S (latency and
reliability are properties of the machine, not of the parameters), of the `hybrid` system on the
dev partition. Q alone would reward never returning an empty list; C keeps the evidence
threshold honest. A point whose answerable Hit@10 is below `tuning.min_hit10` loses 1.0, so
any point above the floor beats every point below it (the evidence thresholds and the
abstention model may not buy CorrectEmpty with answerable queries). Each query's candidates
are retrieved once at the largest depth on the grid and re-ranked for every grid point (route
lists do not depend on weights, k or thresholds).
The protocol check (dev only) runs before the benchmark's queries or qrels are read.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run, stage_params  # noqa: E402

from mambomeme.config import corpus_config, scored_benchmark_dir  # noqa: E402
from mambomeme.errors import TuningError  # noqa: E402
from mambomeme.evaluation.benchmark import load_benchmark  # noqa: E402
from mambomeme.evaluation.runner import run_benchmark  # noqa: E402
from mambomeme.evaluation.score import (  # noqa: E402
    WEIGHTS,
    OutcomeTable,
    aggregate,
    evaluate_run,
)
from mambomeme.evaluation.tuning import (  # noqa: E402
    add_to_selection,
    load_selection,
    search_params,
    tune,
)
from mambomeme.models.abstention.train import examples, train_abstention  # noqa: E402
from mambomeme.models.usefulness.fit import fit_for_selection  # noqa: E402
from mambomeme.release.protocol import check_tuning_allowed, read_benchmark_meta  # noqa: E402
from mambomeme.search.engine import Engine, EngineConfig  # noqa: E402
from mambomeme.search.results import Filters, SearchResponse  # noqa: E402


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    params = stage_params(__doc__.splitlines()[0])
    corpus, _ = corpus_config(params)
    settings = params["tuning"]
    bench_dir = scored_benchmark_dir(params)  # queries + the adjudicated judgement set
    check_tuning_allowed(read_benchmark_meta(bench_dir))  # before any query or qrel is read
    benchmark = load_benchmark(bench_dir)
    engine = Engine.open(Path("build") / corpus, params)
    system = str(settings.get("system", "hybrid"))

    depth = max(
        [int(params["search"]["depth"])] + [int(d) for d in settings["axes"].get("depth", [])]
    )
    cache = {}
    for query in benchmark.queries:
        key = (tuple(query.all_cues), Filters(**query.filter_dict))
        cache[key] = engine.retrieve(query.all_cues, Filters(**query.filter_dict), system, depth)

    floor = float(settings.get("min_hit10", 0.0))

    def evaluate(
        config: dict[str, Any], withheld: frozenset[tuple[str, ...]] = frozenset()
    ) -> float:
        searched = {**params, "search": search_params(params["search"], config)}
        ranked = EngineConfig.from_params(searched)

        def search(cues: list[str], filters: Filters) -> SearchResponse:
            found = cache[(tuple(cues), filters)]
            results = tuple(engine.rank(found, 10, ranked)) if found is not None else ()
            if tuple(cues) in withheld:  # the abstention model empties this list
                results = ()
            return SearchResponse("tune", system, tuple(cues), results)

        # items: each shown item's own safety class for the ones safety.tsv does not label
        # (without it an unlabelled item counts as unsafe, and S rewards shorter lists)
        found = run_benchmark(benchmark, search, system, items=engine.items)
        parts = aggregate(OutcomeTable.of(evaluate_run(benchmark, found)))
        if parts.Q is None:
            raise TuningError(f"{bench_dir}: no answerable query in any primary slice")
        quality = {"Q": parts.Q, "E": parts.E or 0.0, "C": parts.C, "S": parts.S or 0.0}
        objective = sum(WEIGHTS[name] * value for name, value in quality.items())
        hit10 = parts.hit10 or 0.0
        below = hit10 < floor
        if below:  # feasible points first; among infeasible ones the objective still orders
            objective -= 1.0
        print(
            f"  objective={objective:.4f} Q={parts.Q:.4f} C={parts.C:.3f} Hit@10={hit10:.3f}"
            f"{' (below the Hit@10 floor)' if below else ''} {config}",
            flush=True,
        )
        return objective

    by_qid = {q.qid: tuple(q.all_cues) for q in benchmark.queries}

    def fit_for(
        config: dict[str, Any], abstain: dict[str, Any]
    ) -> tuple[Any, Any, frozenset[tuple[str, ...]]]:
        chosen = EngineConfig.from_params(
            {**params, "search": search_params(params["search"], config)}
        )
        exs = examples(
            engine,
            benchmark,
            lambda cues, filters: cache[(tuple(cues), Filters(**filters))],
            chosen,
        )
        model, report = train_abstention(
            exs, int(abstain["seed"]), int(abstain["folds"]), float(abstain["min_hit10"])
        )
        return model, report, frozenset(by_qid[q] for q in report["withheld"])

    grid = {**settings, "defaults": search_params_defaults(params["search"], settings["axes"])}
    selection = tune(
        bench_dir,
        evaluate,
        grid,
        out=Path(params["base"]["reports"]) / "selection.json",
        overwrite=True,
    )
    print(
        f"tune {corpus}: {len(selection.curve)} points, best Q={selection.objective:.4f} "
        f"at {dict(selection.config)}"
    )
    abstain = settings.get("abstention") or {}
    if abstain.get("enabled"):
        joint = choose_with_abstention(
            selection.curve, int(abstain.get("candidates", 12)), abstain, evaluate, fit_for
        )
        path = Path(params["base"]["reports"]) / "selection.json"
        add_to_selection(path, joint)
        print(
            f"with abstention: {joint['config']} objective {joint['objective']:.4f} "
            f"(grid best without: {selection.objective:.4f}); abstention "
            f"{joint['abstention_report']['chosen']}"
        )
    if (params.get("usefulness") or {}).get("enabled"):
        path = Path(params["base"]["reports"]) / "selection.json"
        frozen = load_selection(path)
        fields = fit_for_selection(
            params, engine, benchmark, frozen["config"], float(frozen["objective"])
        )
        add_to_selection(path, fields)
        report = fields["usefulness_report"]
        print(
            f"usefulness model: objective {report['objective_out_of_fold']:.4f} out of fold "
            f"vs {report['selection_objective']:.4f}: {'kept' if report['kept'] else 'not kept'}"
        )


def choose_with_abstention(
    curve: Any, candidates: int, abstain: dict[str, Any], evaluate: Any, fit_for: Any
) -> dict[str, Any]:
    """Route weights and the abstention threshold chosen together: for the best grid point of
    each route-weight combination (the `candidates` best of them), train the abstention model
    (threshold from out-of-fold probabilities) and score the objective with its withheld lists;
    keep the best (ties: the earlier, i.e. better-without, candidate)."""
    best_per_routes: dict[tuple[Any, ...], dict[str, Any]] = {}
    for point in curve:
        key = tuple(sorted((k, v) for k, v in point["config"].items() if k.startswith("route_")))
        if key not in best_per_routes or point["objective"] > best_per_routes[key]["objective"]:
            best_per_routes[key] = point
    ranked = sorted(best_per_routes.values(), key=lambda p: -p["objective"])[:candidates]
    tried = []
    best: dict[str, Any] | None = None
    for point in ranked:
        model, report, withheld = fit_for(point["config"], abstain)
        objective = evaluate(point["config"], withheld)
        tried.append({"config": point["config"], "without": point["objective"],
                      "with_abstention": objective, "chosen": report["chosen"]})  # fmt: skip
        if best is None or objective > best["objective"] + 1e-12:
            best = {"config": dict(point["config"]), "objective": objective,
                    "abstention": model, "abstention_report": report}  # fmt: skip
    assert best is not None
    best["joint_candidates"] = tried
    return best


def search_params_defaults(search: dict[str, Any], axes: dict[str, Any]) -> dict[str, Any]:
    """The params.yaml value of each dotted axis key (the tie-break's 'default-like' anchor)."""
    defaults: dict[str, Any] = {}
    for dotted in axes:
        node: Any = search
        for part in dotted.split("."):
            node = node.get(part, 0.0) if isinstance(node, dict) else 0.0
        defaults[dotted] = node
    return defaults


if __name__ == "__main__":
    run(main)
