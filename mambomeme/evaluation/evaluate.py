"""`mambomeme run` and `mambomeme score`: the evaluation commands (see docs/CONTRACTS.md).

    mambomeme run --benchmark DIR --system NAME --out FILE [--build DIR] [--force]
    mambomeme score --benchmark DIR --runs FILE... [--out-dir reports] [--gates-input FILE]
    (both: [--selection FILE] [--dev-benchmark DIR] [--ledger FILE], read for a hidden benchmark)

Both read any benchmark folder in the FORMAT.md layout, so an external (hidden) benchmark is
scored with the same commands and no code change. The engine is imported inside the handler so
`mambomeme score` never loads indexes or models.

A benchmark whose benchmark.json says "partition": "hidden" goes through the release protocol
(release/protocol.py) first, before its queries are read: a frozen selection (default
<base.reports>/selection.json) tuned on a dev benchmark of the same corpus whose checksum today
equals the recorded one, and a version not exposed to another selection (ledger
releases/exposed.jsonl). `run` records the selection's sha256 in the run's meta (no --system: the
selection's own system); `score` also needs every run made under that selection and the bm25,
dense and hybrid baselines, and appends the exposure to the ledger before writing the scorecard.
A refusal is HoldoutNotAllowedError or ExposedBenchmarkError (exit 4 from the CLI).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mambomeme.config import DEFAULT_PARAMS, build_dir, load_params
from mambomeme.corpus.manifest import sha256_file
from mambomeme.errors import BenchmarkError, MamboMemeError
from mambomeme.evaluation.benchmark import Benchmark, load_benchmark
from mambomeme.evaluation.bootstrap import DEFAULT_RESAMPLES
from mambomeme.evaluation.judgement_sets import read_record
from mambomeme.evaluation.report import write_scorecard
from mambomeme.evaluation.runner import run_benchmark
from mambomeme.evaluation.runs import MAX_RESULTS, Run, read_run, run_meta, sidecar, write_run
from mambomeme.evaluation.scorecard import build_scorecard
from mambomeme.release.protocol import (
    LEDGER_PATH,
    Holdout,
    admit_holdout,
    check_holdout_runs,
    expose,
)

# Untimed searches before the timed pass, so the first query does not pay for loading the model.
DEFAULT_WARMUPS = 10


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


def admit(args: argparse.Namespace, params: Mapping[str, Any]) -> Holdout | None:
    """The protocol's admission of args.benchmark: None for a dev benchmark."""
    selection = args.selection
    if selection is None:
        reports = Path(str(params.get("base", {}).get("reports", "reports")))
        selection = reports / "selection.json"
    return admit_holdout(args.benchmark, selection, args.ledger, args.dev_benchmark)


def find_corpus_manifest(build: Path, given: Path | None) -> Path:
    candidates = (
        [given]
        if given
        else [Path("manifests") / f"corpus-{build.name}.json", build / "manifest.json"]
    )
    for candidate in candidates:
        if candidate is not None and candidate.is_file():
            return candidate
    looked = ", ".join(str(c) for c in candidates)
    raise BenchmarkError(f"no corpus manifest found (looked at {looked}); pass --corpus-manifest")


def code_commit() -> str | None:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def evaluation_params(params: Mapping[str, Any]) -> dict[str, Any]:
    section = params.get("evaluation", {})
    if not isinstance(section, dict):
        raise MamboMemeError("params 'evaluation' must be a mapping")
    return section


def embedding_manifest(engine: Any, build: Path, system: str) -> Path | None:
    """The dense index manifest a system reads, if any: resolved by the engine's own system
    parser (`Engine.system`), so a name means the same matrix here as when it is served."""
    from mambomeme.index.dense import DenseFiles

    spec = engine.system(system)
    if "dense" not in spec.routes:
        return None
    path = DenseFiles.in_dir(build / "dense", spec.dense_variant).manifest
    return path if path.is_file() else None


def execute_run(
    engine: Any,
    benchmark: Benchmark,
    system: str,
    out: Path,
    build: Path,
    corpus_manifest: Path,
    params: Mapping[str, Any],
    force: bool,
    label: str | None = None,
    selection_sha256: str | None = None,
) -> Run:
    """Run `system` of an open engine over `benchmark` and write FILE and its sidecars; the
    run is named `label` (e.g. "shipped") when given, else by the system. A run of a hidden
    benchmark records the admitted selection's `selection_sha256` in its meta."""
    if out.exists() and not force:
        raise BenchmarkError(f"{out}: exists; pass --force to overwrite")
    if system not in engine.systems():
        raise MamboMemeError(
            f"unknown system {system!r}; the engine has {', '.join(engine.systems())}"
        )
    dense_manifest = embedding_manifest(engine, build, system)
    extra = {
        "corpus_manifest": str(corpus_manifest),
        "embedding_manifest": str(dense_manifest) if dense_manifest else None,
        "embedding_manifest_sha256": sha256_file(dense_manifest) if dense_manifest else None,
        "build": str(build),
        "code_commit": code_commit(),
        "limit": MAX_RESULTS,
    }
    extra["engine_system"] = system
    if selection_sha256 is not None:
        extra["selection_sha256"] = selection_sha256
    name = label or system
    meta = run_meta(benchmark, name, sha256_file(corpus_manifest), extra)
    warmups = int(evaluation_params(params).get("warmups", DEFAULT_WARMUPS))

    def search(cues: list[str], filters: Any) -> Any:
        return engine.search(cues, limit=MAX_RESULTS, filters=filters, system=system)

    run = run_benchmark(
        benchmark, search, name, items=engine.items, meta=meta, limit=MAX_RESULTS, warmups=warmups
    )
    write_run(out, run, force=force)
    return run


def run_command(args: argparse.Namespace) -> int:
    if args.out.exists() and not args.force:
        raise BenchmarkError(f"{args.out}: exists; pass --force to overwrite")
    params = load_params(args.params)
    holdout = admit(args, params)  # before the queries of a hidden benchmark are read
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
    run = execute_run(
        engine, benchmark, system, args.out, build, manifest, params, args.force, label, sha
    )
    print(
        f"{args.out}: {len(benchmark.queries)} queries, {len(run.errors)} errors, "
        f"{sum(len(r) for r in run.rankings.values())} results "
        f"(+ {sidecar(args.out, '.errors.jsonl').name}, .latency.jsonl, .details.jsonl, .meta.json)"
    )
    return 0


def bootstrap_settings(
    params: Mapping[str, Any], seed: int | None, resamples: int | None
) -> tuple[int, int]:
    """(seed, resamples): command line, else evaluation.bootstrap, else base.seed and 1000."""
    boot = evaluation_params(params).get("bootstrap", {}) or {}
    if seed is None:
        seed = boot.get("seed", params.get("base", {}).get("seed"))
    if seed is None:
        raise MamboMemeError("no bootstrap seed: set evaluation.bootstrap.seed or pass --seed")
    count = resamples if resamples is not None else int(boot.get("resamples", DEFAULT_RESAMPLES))
    if count < 1:
        raise MamboMemeError(f"bootstrap resamples must be >= 1, got {count}")
    return int(seed), count


def score_runs(
    benchmark_dir: Path,
    run_files: list[Path],
    out_dir: Path,
    gates_input: Path | None,
    seed: int,
    resamples: int,
    holdout: Holdout | None = None,
) -> dict[str, Any]:
    """Score the runs and write the scorecard. With a `holdout` (a hidden benchmark admitted by
    the protocol) every run must carry its selection, and the exposure is appended to the ledger
    before the scorecard is written: a crash in between leaves the version exposed, never not."""
    benchmark = load_benchmark(benchmark_dir)
    runs = {str(path): read_run(path, benchmark) for path in run_files}
    if holdout is not None:
        check_holdout_runs(holdout, {label: run.meta for label, run in runs.items()})
    card = build_scorecard(benchmark, runs, gates_input=gates_input, seed=seed, resamples=resamples)
    card["agreement"] = judgement_agreement(
        benchmark_dir, benchmark.info.name, benchmark.info.judgement_set
    )
    if holdout is not None:
        exposure = expose(holdout)
        card["exposure"] = {
            "ledger": str(holdout.ledger_path),
            "selection": str(holdout.selection_path),
            "selection_sha256": holdout.selection_sha256,
            "checksum": exposure.checksum,
            "time": exposure.time,
        }
    write_scorecard(card, out_dir)
    return card


def judgement_agreement(
    benchmark_dir: Path, name: str, judgement_set: str
) -> dict[str, Any] | None:
    """Inter-annotator agreement of the benchmark's frozen judgement set, where one exists: the
    scored benchmark's copy (benchmark_dir/agreement.json, with judgement-set.json naming the set
    and how the current pool is covered), else judgement-sets/<benchmark>/<set>/agreement.json."""
    path = Path(benchmark_dir) / "agreement.json"
    if not path.exists():
        path = Path("judgement-sets") / name / judgement_set / "agreement.json"
    if not path.exists():
        return None
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    record = read_record(benchmark_dir)
    coverage = record.get("coverage") if record else None
    return {"judgement_set": judgement_set, "file": str(path), "coverage": coverage, **data}


def score_command(args: argparse.Namespace) -> int:
    params = load_params(args.params) if args.params.is_file() else {}
    seed, resamples = bootstrap_settings(params, args.seed, args.resamples)
    holdout = admit(args, params)
    card = score_runs(
        args.benchmark, list(args.runs), args.out_dir, args.gates_input, seed, resamples, holdout
    )
    for row in card["systems"]:
        print(
            f"{row['system']:<24} MMTS {row['mmts']:6.2f} {row['status']:<4} "
            f"(raw {row['mmts_raw']:.2f}, Q {row['components']['Q'] or 0:.4f})"
        )
    if card["acceptance"] is not None:
        print(f"decision: {card['acceptance']['decision']}")
    if holdout is not None:
        print(
            f"recorded exposure of {holdout.meta['name']}@{holdout.meta['version']} to selection "
            f"{holdout.selection_sha256[:12]} in {holdout.ledger_path}",
            file=sys.stderr,
        )
    print(f"wrote {args.out_dir / 'scorecard.md'}", file=sys.stderr)
    return 0
