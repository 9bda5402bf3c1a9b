"""Does `hybrid+rerank` earn its place? The seed's acceptance rule against each baseline.

The rule of evaluation/acceptance.py (seeds/000), with the baseline in BM25's seat and the
reranked system in hybrid's: a gain of >= +0.03 overall nDCG@10 (Q) or >= +0.05 on the concept
slice with a paired family-bootstrap 95% interval above zero, no hard-gate regression, no entity
or quote nDCG@10 loss > 0.02. Also per-slice nDCG@10 and the unjudged items in each top 10
(a reranker shows items the pools never saw; they score as not relevant).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from mambomeme.evaluation.benchmark import Benchmark
from mambomeme.evaluation.gates import PASS
from mambomeme.evaluation.runs import Run
from mambomeme.evaluation.system_scores import score_systems


def compare(
    benchmark: Benchmark,
    runs: Mapping[str, Run],
    candidate: str,
    baselines: Sequence[str],
    *,
    gates_input: Path | None,
    seed: int,
    resamples: int,
) -> dict[str, Any]:
    """Rows per system (Q, slice nDCG@10, gates passed, unjudged top-10 items) and one decision
    per baseline (`candidate` - baseline, bootstrap intervals by metric)."""
    scored = score_systems(benchmark, runs, gates_input=gates_input)
    outcomes, gates = scored.outcomes, scored.gates
    rows: dict[str, dict[str, Any]] = {}
    for system in scored.components:
        c = scored.components[system]
        unjudged = [len(o.unjudged_top10) for o in outcomes[system]]
        rows[system] = {
            "Q": c.Q,
            "E": c.E,
            "C": c.C,
            "slice_ndcg": dict(c.slice_ndcg),
            "latency_p95_ms": c.latency_p95_ms,
            "gates_failed": [g.name for g in gates[system] if g.status != PASS],
            "unjudged_top10": sum(unjudged),
            "shown_top10": sum(min(o.shown, 10) for o in outcomes[system]),
            "queries_with_unjudged": sum(1 for n in unjudged if n),
        }
    pairs = [(candidate, b) for b in baselines]
    boot = scored.bootstrap(pairs, seed=seed, resamples=resamples)
    decisions = {}
    for baseline in baselines:
        decision = scored.decide(benchmark, baseline, candidate, boot)
        decisions[baseline] = {
            "wins": decision.keep_dense,
            "checks": [asdict(check) for check in decision.checks],
            "differences": {
                metric: asdict(ci)
                for metric, ci in boot.differences[(candidate, baseline)].items()
                if metric
                in ("Q", "ndcg_concept", "ndcg_visual", "ndcg_entity", "ndcg_quote", "MMTS")
            },
        }
    return {
        "benchmark": benchmark.info.name,
        "seed": seed,
        "resamples": resamples,
        "families": boot.families,
        "systems": rows,
        "decisions": decisions,
    }
