"""Run a system over a benchmark into a TREC run file, and score run files into the scorecard:
what `mambomeme run` / `score` (cli/evaluation.py) and the stages run_systems, run_shipped and
score call (see docs/CONTRACTS.md).

Both read any benchmark folder in the FORMAT.md layout, so an external (hidden) benchmark is
scored with the same code and no change. The engine is passed in (or imported by the caller), so
scoring never loads indexes or models.

A benchmark whose benchmark.json says "partition": "hidden" goes through the release protocol
(release/protocol.py) first, before its queries are read (`admit`): a frozen selection (default
<base.reports>/selection.json) tuned on a dev benchmark of the same corpus whose checksum today
equals the recorded one, and a version not exposed to another selection (ledger
releases/exposed.jsonl). A run records the selection's sha256 in its meta; scoring also needs
every run made under that selection and the bm25, dense and hybrid baselines, and appends the
exposure to the ledger before writing the scorecard. A refusal is HoldoutNotAllowedError or
ExposedBenchmarkError (exit 4 from the CLI).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mambomeme.config import EvaluationParams
from mambomeme.corpus.manifest import sha256_file
from mambomeme.errors import BenchmarkError, MamboMemeError
from mambomeme.evaluation.benchmark import Benchmark, load_benchmark
from mambomeme.evaluation.judgement_sets import read_record
from mambomeme.evaluation.report import write_scorecard
from mambomeme.evaluation.rerank_acceptance import compare as rerank_acceptance_compare
from mambomeme.evaluation.run_meta import Provenance
from mambomeme.evaluation.runner import run_benchmark
from mambomeme.evaluation.runs import MAX_RESULTS, Run, read_run, run_meta, write_run
from mambomeme.evaluation.scorecard import build_scorecard
from mambomeme.evaluation.scorecard_types import Scorecard
from mambomeme.release.protocol import Holdout, admit_holdout, check_holdout_runs, expose

RERANKED = "hybrid+rerank"  # the reranked system whose acceptance the scorecard reports


def admit(
    benchmark: Path,
    params: Mapping[str, Any],
    selection: Path | None,
    ledger: Path,
    dev_benchmark: Path | None,
) -> Holdout | None:
    """The protocol's admission of `benchmark` (None for a dev benchmark); the selection defaults
    to <base.reports>/selection.json."""
    if selection is None:
        reports = Path(str(params.get("base", {}).get("reports", "reports")))
        selection = reports / "selection.json"
    return admit_holdout(benchmark, selection, ledger, dev_benchmark)


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


def execute_run(
    engine: Any,
    benchmark: Benchmark,
    system: str,
    out: Path,
    build: Path,
    corpus_manifest: Path,
    warmups: int,
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
    dense_manifest = engine.embedding_manifest(system)  # the matrix served for that name
    provenance = Provenance(
        corpus_manifest=str(corpus_manifest),
        embedding_manifest=str(dense_manifest) if dense_manifest else None,
        embedding_manifest_sha256=sha256_file(dense_manifest) if dense_manifest else None,
        build=str(build),
        code_commit=code_commit(),
        limit=MAX_RESULTS,
        engine_system=system,
    )
    name = label or system
    meta = run_meta(benchmark, name, sha256_file(corpus_manifest), provenance, selection_sha256)

    def search(cues: list[str], filters: Any) -> Any:
        return engine.search(cues, limit=MAX_RESULTS, filters=filters, system=system)

    run = run_benchmark(
        benchmark, search, name, items=engine.items, meta=meta, limit=MAX_RESULTS, warmups=warmups
    )
    write_run(out, run, force=force)
    return run


def bootstrap_settings(
    evaluation: EvaluationParams, base_seed: int | None, seed: int | None, resamples: int | None
) -> tuple[int, int]:
    """(seed, resamples): command line, else evaluation.bootstrap, else `base_seed` (params
    base.seed) and 1000."""
    if seed is None:
        seed = evaluation.bootstrap_seed if evaluation.bootstrap_seed is not None else base_seed
    if seed is None:
        raise MamboMemeError("no bootstrap seed: set evaluation.bootstrap.seed or pass --seed")
    count = resamples if resamples is not None else evaluation.bootstrap_resamples
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
    extra: Mapping[str, Any] | None = None,
) -> Scorecard:
    """Score the runs and write the scorecard, with `extra` sections (the checks and the
    overlap report) added to it as they are. With a `holdout` (a hidden benchmark admitted by
    the protocol) every run must carry its selection, and the exposure is appended to the ledger
    before the scorecard is written: a crash in between leaves the version exposed, never not."""
    benchmark = load_benchmark(benchmark_dir)
    runs = {str(path): read_run(path, benchmark) for path in run_files}
    if holdout is not None:
        check_holdout_runs(holdout, {label: run.meta for label, run in runs.items()})
    card = build_scorecard(benchmark, runs, gates_input=gates_input, seed=seed, resamples=resamples)
    card = card.with_sections(
        rerank_acceptance=rerank_acceptance(benchmark, runs, gates_input, seed, resamples),
        agreement=judgement_agreement(
            benchmark_dir, benchmark.info.name, benchmark.info.judgement_set
        ),
    )
    if holdout is not None:
        exposure = expose(holdout)
        card = card.with_sections(
            exposure={
                "ledger": str(holdout.ledger_path),
                "selection": str(holdout.selection_path),
                "selection_sha256": holdout.selection_sha256,
                "checksum": exposure.checksum,
                "time": exposure.time,
            }
        )
    card = card.with_sections(**(extra or {}))
    write_scorecard(card, out_dir)
    return card


def rerank_acceptance(
    benchmark: Benchmark,
    runs: dict[str, Run],
    gates_input: Path | None,
    seed: int,
    resamples: int,
) -> dict[str, Any] | None:
    """The seed's acceptance rule for `hybrid+rerank` against each non-reranked baseline scored
    beside it (hybrid, bm25); None when there is no reranked run or no baseline."""
    systems = {run.system for run in runs.values()}
    baselines = [b for b in ("hybrid", "bm25") if b in systems]
    if RERANKED not in systems or not baselines:
        return None
    wanted = {k: r for k, r in runs.items() if r.system in (RERANKED, *baselines)}
    return rerank_acceptance_compare(
        benchmark,
        wanted,
        RERANKED,
        baselines,
        gates_input=gates_input,
        seed=seed,
        resamples=resamples,
    )


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
