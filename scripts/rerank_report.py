"""Score hybrid+rerank against its baselines on one benchmark (evaluation/rerank_acceptance.py).

    python scripts/rerank_report.py --benchmark DIR --candidate RUN --baseline RUN... \
        --out reports/memes-10k/rerank-dev-v2.json [--gates-input FILE]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mambomeme.config import load_params
from mambomeme.corpus.manifest import write_json_atomic
from mambomeme.evaluation.benchmark import load_benchmark
from mambomeme.evaluation.rerank_acceptance import compare
from mambomeme.evaluation.runs import read_run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmark", type=Path, required=True)
    parser.add_argument("--candidate", type=Path, required=True)
    parser.add_argument("--baseline", type=Path, nargs="+", required=True)
    parser.add_argument("--gates-input", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    boot = load_params()["evaluation"]["bootstrap"]
    benchmark = load_benchmark(args.benchmark)
    runs = {str(p): read_run(p, benchmark) for p in [args.candidate, *args.baseline]}
    candidate = runs[str(args.candidate)].system
    baselines = [runs[str(p)].system for p in args.baseline]
    report = compare(
        benchmark,
        runs,
        candidate,
        baselines,
        gates_input=args.gates_input,
        seed=int(boot["seed"]),
        resamples=int(boot["resamples"]),
    )
    write_json_atomic(args.out, report)
    print(json.dumps(report, indent=1)[:6000])


if __name__ == "__main__":
    main()
