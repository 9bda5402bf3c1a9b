"""`mambomeme run` and `mambomeme score`: the evaluation commands (see docs/CONTRACTS.md).

    mambomeme run --benchmark DIR --system NAME --out FILE [--build DIR] [--force]
    mambomeme score --benchmark DIR --runs FILE... [--out-dir reports] [--gates-input FILE]
    (both: [--selection FILE] [--dev-benchmark DIR] [--ledger FILE], read for a hidden benchmark)

The work is evaluation/evaluate.py's; `run` with no --system runs the shipped system (the
protocol's admitted selection for a hidden benchmark). The engine is imported inside the handler
so `mambomeme score` never loads indexes or models.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from mambomeme.config import DEFAULT_PARAMS, EvaluationParams, build_dir, load_params
from mambomeme.errors import BenchmarkError
from mambomeme.evaluation.benchmark import load_benchmark
from mambomeme.evaluation.evaluate import (
    admit,
    bootstrap_settings,
    execute_run,
    find_corpus_manifest,
    score_runs,
)
from mambomeme.evaluation.runs import sidecar
from mambomeme.release.protocol import LEDGER_PATH


def register(subparsers: Any) -> None:
    run = subparsers.add_parser("run", help="run one system over a benchmark into a TREC run file")
    run.add_argument("--benchmark", type=Path, required=True, help="benchmark folder (FORMAT.md)")
    run.add_argument(
        "--system",
        default=None,
        help="bm25 | dense | hybrid | hybrid-no-<field> (default: the shipped system)",
    )
    run.add_argument("--out", type=Path, required=True, help="run file to write (FILE + sidecars)")
    run.add_argument("--build", type=Path, help="build dir (default: build/<base.corpus>)")
    run.add_argument("--params", type=Path, default=DEFAULT_PARAMS)
    run.add_argument(
        "--corpus-manifest", type=Path, help="default: manifests/corpus-<build name>.json"
    )
    run.add_argument("--force", action="store_true", help="overwrite an existing run file")
    add_protocol_arguments(run)
    run.set_defaults(handler=run_command)

    score = subparsers.add_parser("score", help="score run files and write the scorecard")
    score.add_argument("--benchmark", type=Path, required=True, help="benchmark folder (FORMAT.md)")
    score.add_argument("--runs", type=Path, nargs="+", required=True, help="run files")
    score.add_argument("--out-dir", type=Path, default=Path("reports"))
    score.add_argument("--gates-input", type=Path, help="JSON with TUI p95 / release test results")
    score.add_argument("--params", type=Path, default=DEFAULT_PARAMS)
    score.add_argument(
        "--seed", type=int, help="bootstrap seed (default: evaluation.bootstrap.seed)"
    )
    score.add_argument(
        "--resamples", type=int, help="bootstrap resamples (default: params or 1000)"
    )
    add_protocol_arguments(score)
    score.set_defaults(handler=score_command)


def add_protocol_arguments(parser: Any) -> None:
    """The release-protocol options; read only when the benchmark's partition is hidden."""
    parser.add_argument(
        "--selection",
        type=Path,
        help="hidden benchmark: the frozen selection.json (default: <base.reports>/selection.json)",
    )
    parser.add_argument(
        "--dev-benchmark",
        type=Path,
        help="hidden benchmark: the dev benchmark the selection was tuned on "
        "(default: the selection's benchmark.dir)",
    )
    parser.add_argument(
        "--ledger",
        type=Path,
        default=LEDGER_PATH,
        help=f"hidden benchmark: the exposure ledger (default: {LEDGER_PATH})",
    )


def run_command(args: argparse.Namespace) -> int:
    if args.out.exists() and not args.force:
        raise BenchmarkError(f"{args.out}: exists; pass --force to overwrite")
    params = load_params(args.params, build=args.build)  # that corpus's reports/selection
    # before the queries of a hidden benchmark are read
    holdout = admit(args.benchmark, params, args.selection, args.ledger, args.dev_benchmark)
    benchmark = load_benchmark(args.benchmark)
    build = args.build or build_dir(params)
    manifest = find_corpus_manifest(build, args.corpus_manifest)
    from mambomeme.search.engine import Engine
    from mambomeme.search.shipped import from_selection, shipped

    system = args.system
    if system is None:  # the shipped system with its frozen selection
        if holdout is not None:  # exactly the selection the protocol admitted
            ship = from_selection(params, holdout.selection_path)
        else:
            ship = shipped(params, build, Path(str(params["base"]["reports"])))
        params, system = ship.params, ship.system
        print(f"system {system} (shipped: {ship.source})")
    engine = Engine.open(build, params)
    label = "shipped" if args.system is None else None  # the run says what it measured
    sha = holdout.selection_sha256 if holdout is not None else None
    warmups = EvaluationParams.from_params(params.get("evaluation")).warmups
    run = execute_run(
        engine, benchmark, system, args.out, build, manifest, warmups, args.force, label, sha
    )
    print(
        f"{args.out}: {len(benchmark.queries)} queries, {len(run.errors)} errors, "
        f"{sum(len(r) for r in run.rankings.values())} results "
        f"(+ {sidecar(args.out, '.errors.jsonl').name}, .latency.jsonl, .details.jsonl, .meta.json)"
    )
    return 0


def score_command(args: argparse.Namespace) -> int:
    params = load_params(args.params) if args.params.is_file() else {}
    evaluation = EvaluationParams.from_params(params.get("evaluation"))
    base_seed = params.get("base", {}).get("seed")
    seed, resamples = bootstrap_settings(evaluation, base_seed, args.seed, args.resamples)
    holdout = admit(args.benchmark, params, args.selection, args.ledger, args.dev_benchmark)
    card = score_runs(
        args.benchmark, list(args.runs), args.out_dir, args.gates_input, seed, resamples, holdout
    )
    for row in card.systems:
        print(
            f"{row.system:<24} MMTS {row.mmts:6.2f} {row.status:<4} "
            f"(raw {row.mmts_raw:.2f}, Q {row.components.Q or 0:.4f})"
        )
    if card.acceptance is not None:
        print(f"decision: {card.acceptance.decision}")
    if holdout is not None:
        print(
            f"recorded exposure of {holdout.meta['name']}@{holdout.meta['version']} to selection "
            f"{holdout.selection_sha256[:12]} in {holdout.ledger_path}",
            file=sys.stderr,
        )
    print(f"wrote {args.out_dir / 'scorecard.md'}", file=sys.stderr)
    return 0
