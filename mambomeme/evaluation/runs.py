"""TREC run files and their sidecars: write, read back, validate, and check comparability.

A run of one system over one benchmark is five files (FILE is e.g. runs/dev/hybrid.trec):

    FILE                 "<qid> Q0 <item_id> <rank> <score> <system>", ranks 1..n (n <= 10),
                         scores strictly decreasing with rank; an empty list has no lines
    FILE.errors.jsonl    {"qid", "error"} per errored query (an error is never an empty list)
    FILE.latency.jsonl   {"qid", "latency_ms", "errored", "timings_ms"} for every benchmark query
    FILE.details.jsonl   per returned result: qid, rank, item_id, template_group, image_sha256,
                         duplicate_key, preview, attribution, license, safety, routes, fused_score
    FILE.meta.json       system, benchmark/corpus/judgement/policy/score versions, manifests

The latency sidecar lists every query the run executed, so "absent from FILE" can only mean an
empty result list, never "not run". All files are written to temporary names first and then
moved into place with os.replace, so a reader never sees half a run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mambomeme.errors import BenchmarkError, VersionMismatchError
from mambomeme.evaluation.benchmark import Benchmark
from mambomeme.evaluation.run_meta import Provenance, RunMeta, read_meta
from mambomeme.evaluation.versions import SAFETY_POLICY, SCORE_VERSION

MAX_RESULTS = 10
SIDECARS = (".errors.jsonl", ".latency.jsonl", ".details.jsonl", ".meta.json")


@dataclass(frozen=True)
class ResultDetail:
    """What the diagnostics need about one shown result (from the engine's Result and Item)."""

    qid: str
    rank: int
    item_id: str
    template_group: str
    image_sha256: str
    duplicate_key: str  # equal keys = exact duplicates (see runner.duplicate_key)
    preview: str
    attribution: str
    license: str
    safety: str  # the corpus item's own label ("" when the engine did not know the item)
    routes: tuple[str, ...]
    fused_score: float


@dataclass(frozen=True)
class Run:
    """One system's results for every query of one benchmark."""

    system: str
    meta: RunMeta
    rankings: Mapping[str, tuple[str, ...]]  # qid -> item ids in rank order; absent = empty list
    errors: Mapping[str, str]  # qid -> error message
    latency_ms: Mapping[str, float]  # qid -> wall time of the search call
    timings_ms: Mapping[str, Mapping[str, float]]  # qid -> the engine's own stage timings
    details: Mapping[str, tuple[ResultDetail, ...]]  # qid -> one per shown result, rank order


def sidecar(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def run_meta(
    benchmark: Benchmark,
    system: str,
    corpus_manifest_sha256: str,
    provenance: Provenance | None = None,
    selection_sha256: str | None = None,
    extra: Mapping[str, Any] | None = None,
) -> RunMeta:
    """The .meta.json content: every field in COMPARED_FIELDS plus what produced the run;
    `extra` keys are written as they are."""
    return RunMeta(
        system=system,
        **benchmark.versions(),
        benchmark_partition=benchmark.info.partition,
        safety_policy=SAFETY_POLICY,
        score_version=SCORE_VERSION,
        corpus_manifest_sha256=corpus_manifest_sha256,
        provenance=provenance,
        selection_sha256=selection_sha256,
        extra=dict(extra or {}),
    )


def write_run(path: Path, run: Run, force: bool = False) -> None:
    """Write FILE and its sidecars; refuse to replace an existing FILE unless `force`."""
    path = Path(path)
    targets = [path, *(sidecar(path, s) for s in SIDECARS)]
    if not force:
        for target in targets:
            if target.exists():
                raise BenchmarkError(f"{target}: exists; pass --force to overwrite")
    if not valid_system_name(run.system):
        raise BenchmarkError(f"system name {run.system!r} must be non-empty without whitespace")
    trec: list[str] = []
    details: list[str] = []
    for qid, ranking in run.rankings.items():
        if qid in run.errors and ranking:
            raise BenchmarkError(f"{qid}: an errored query cannot also have results")
        for rank, item_id in enumerate(ranking, start=1):
            trec.append(f"{qid} Q0 {item_id} {rank} {trec_score(rank)} {run.system}\n")
        for detail in run.details.get(qid, ()):
            details.append(json.dumps(asdict(detail), ensure_ascii=False, sort_keys=True) + "\n")
    errors = [
        json.dumps({"qid": q, "error": e}, ensure_ascii=False) + "\n" for q, e in run.errors.items()
    ]
    latency = [
        json.dumps(
            {
                "qid": q,
                "latency_ms": ms,
                "errored": q in run.errors,
                "timings_ms": dict(run.timings_ms.get(q, {})),
            },
            sort_keys=True,
        )
        + "\n"
        for q, ms in run.latency_ms.items()
    ]
    contents = [
        trec,
        errors,
        latency,
        details,
        [run.meta.to_json()],
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    temps = [target.with_name(f".{target.name}.tmp-{os.getpid()}") for target in targets]
    try:
        for temp, lines in zip(temps, contents, strict=True):
            temp.write_text("".join(lines), encoding="utf-8")
        for temp, target in zip(temps, targets, strict=True):
            os.replace(temp, target)
    finally:
        for temp in temps:
            temp.unlink(missing_ok=True)


def trec_score(rank: int) -> float:
    """The score written for `rank`: MAX_RESULTS + 1 - rank, strictly decreasing (10.0 ... 1.0).

    Fused RRF scores tie often, and trec_eval reorders ties by item id, so the file carries a
    strictly decreasing transform of the engine's own rank; the fused score is in the details.
    """
    return float(MAX_RESULTS + 1 - rank)


def valid_system_name(name: str) -> bool:
    return bool(name) and not any(c.isspace() for c in name)


def read_run(path: Path, benchmark: Benchmark) -> Run:
    """Read FILE and its sidecars, validating every line against the format and `benchmark`."""
    path = Path(path)
    meta = _read_meta(sidecar(path, ".meta.json"))
    system = meta.system
    known = {q.qid for q in benchmark.queries}
    rankings = _read_trec(path, system, known)
    errors = _read_errors(sidecar(path, ".errors.jsonl"), known, rankings)
    latency_ms, timings = _read_latency(sidecar(path, ".latency.jsonl"), known, errors)
    details_path = sidecar(path, ".details.jsonl")
    details = _read_details(details_path, rankings) if details_path.exists() else {}
    return Run(system, meta, rankings, errors, latency_ms, timings, details)


def _jsonl(path: Path) -> list[tuple[str, dict[str, Any]]]:
    if not path.is_file():
        raise BenchmarkError(f"{path}: missing (runs are written by `mambomeme run`)")
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BenchmarkError(f"{where}: invalid JSON: {exc.msg}") from None
        if not isinstance(value, dict):
            raise BenchmarkError(f"{where}: expected a JSON object")
        rows.append((where, value))
    return rows


def _read_meta(path: Path) -> RunMeta:
    meta = read_meta(path)
    if not valid_system_name(meta.system):
        raise BenchmarkError(f"{path}:1: invalid system name {meta.system!r}")
    return meta


def _read_trec(path: Path, system: str, known: set[str]) -> dict[str, tuple[str, ...]]:
    if not path.is_file():
        raise BenchmarkError(f"{path}: missing run file")
    rankings: dict[str, list[str]] = {}
    last: dict[str, tuple[int, float]] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        parts = line.split()
        if len(parts) != 6 or parts[1] != "Q0":
            raise BenchmarkError(f"{where}: expected '<qid> Q0 <item_id> <rank> <score> <system>'")
        qid, _, item_id, rank_text, score_text, name = parts
        if qid not in known:
            raise BenchmarkError(f"{where}: qid {qid!r} is not in the benchmark")
        if name != system:
            raise BenchmarkError(
                f"{where}: system {name!r} differs from the meta file's {system!r}"
            )
        try:
            rank, score = int(rank_text), float(score_text)
        except ValueError:
            raise BenchmarkError(f"{where}: rank must be an integer and score a number") from None
        previous = last.get(qid, (0, float("inf")))
        if rank != previous[0] + 1:
            raise BenchmarkError(f"{where}: rank {rank} of {qid!r} should be {previous[0] + 1}")
        if rank > MAX_RESULTS:
            raise BenchmarkError(f"{where}: more than {MAX_RESULTS} results for {qid!r}")
        if not score < previous[1]:
            raise BenchmarkError(f"{where}: score {score} does not strictly decrease with rank")
        if item_id in rankings.get(qid, []):
            raise BenchmarkError(f"{where}: {item_id!r} listed twice for {qid!r}")
        rankings.setdefault(qid, []).append(item_id)
        last[qid] = (rank, score)
    return {qid: tuple(items) for qid, items in rankings.items()}


def _read_errors(
    path: Path, known: set[str], rankings: Mapping[str, tuple[str, ...]]
) -> dict[str, str]:
    errors: dict[str, str] = {}
    for where, row in _jsonl(path):
        qid, error = row.get("qid"), row.get("error")
        if qid not in known:
            raise BenchmarkError(f"{where}: qid {qid!r} is not in the benchmark")
        if not isinstance(error, str) or not error:
            raise BenchmarkError(f"{where}: 'error' must be a non-empty string")
        if qid in errors:
            raise BenchmarkError(f"{where}: second error for {qid!r}")
        if qid in rankings:
            raise BenchmarkError(f"{where}: {qid!r} errored but has results in the run file")
        errors[str(qid)] = error
    return errors


def _read_latency(
    path: Path, known: set[str], errors: Mapping[str, str]
) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    latency: dict[str, float] = {}
    timings: dict[str, dict[str, float]] = {}
    for where, row in _jsonl(path):
        qid, ms = row.get("qid"), row.get("latency_ms")
        if qid not in known:
            raise BenchmarkError(f"{where}: qid {qid!r} is not in the benchmark")
        if isinstance(ms, bool) or not isinstance(ms, (int, float)) or ms < 0:
            raise BenchmarkError(f"{where}: 'latency_ms' must be a number >= 0")
        if qid in latency:
            raise BenchmarkError(f"{where}: second latency record for {qid!r}")
        if bool(row.get("errored")) != (qid in errors):
            raise BenchmarkError(
                f"{where}: 'errored' disagrees with the errors sidecar for {qid!r}"
            )
        latency[str(qid)] = float(ms)
        raw_timings = row.get("timings_ms", {})
        timings[str(qid)] = {str(k): float(v) for k, v in dict(raw_timings).items()}
    missing = sorted(known - set(latency))
    if missing:
        raise BenchmarkError(
            f"{path}: no record for {len(missing)} benchmark queries, e.g. {missing[0]!r}"
        )
    return latency, timings


def _read_details(
    path: Path, rankings: Mapping[str, tuple[str, ...]]
) -> dict[str, tuple[ResultDetail, ...]]:
    details: dict[str, list[ResultDetail]] = {}
    names = set(ResultDetail.__dataclass_fields__)
    for where, row in _jsonl(path):
        if set(row) != names:
            raise BenchmarkError(f"{where}: expected the keys {sorted(names)}")
        detail = ResultDetail(**{**row, "routes": tuple(row["routes"])})
        ranking = rankings.get(detail.qid, ())
        position = len(details.get(detail.qid, []))
        if (
            position >= len(ranking)
            or ranking[position] != detail.item_id
            or detail.rank != position + 1
        ):
            raise BenchmarkError(
                f"{where}: does not match rank {position + 1} of {detail.qid!r} in the run"
            )
        details.setdefault(detail.qid, []).append(detail)
    for qid, ranking in rankings.items():
        if len(details.get(qid, [])) != len(ranking):
            raise BenchmarkError(
                f"{path}: details of {qid!r} do not cover its {len(ranking)} results"
            )
    return {qid: tuple(rows) for qid, rows in details.items()}


def check_comparable(benchmark: Benchmark, runs: Mapping[str, Run]) -> None:
    """Refuse runs whose versions differ from the benchmark's, from the scorer's or each other's.

    Compared: benchmark name/version/judgement set/corpus/sha256, safety policy, score version
    (all must equal the benchmark and this code's) and the corpus manifest sha256 (all runs
    equal). Raises VersionMismatchError naming the field, the run files and the values.
    """
    expected: dict[str, Any] = dict(benchmark.versions())
    expected.update({"safety_policy": SAFETY_POLICY, "score_version": SCORE_VERSION})
    systems: dict[str, str] = {}
    for label, run in runs.items():
        if run.system in systems:
            raise VersionMismatchError(
                f"{label}: system {run.system!r} also in {systems[run.system]}"
            )
        systems[run.system] = label
        recorded = run.meta.compared()
        for field, value in expected.items():
            if recorded[field] != value:
                raise VersionMismatchError(
                    f"{label}: {field} is {recorded[field]!r}, the benchmark/scorer has {value!r}"
                )
    manifests = {label: run.meta.corpus_manifest_sha256 for label, run in runs.items()}
    if len(set(manifests.values())) > 1:
        listed = ", ".join(f"{label}={value!r}" for label, value in manifests.items())
        raise VersionMismatchError(f"corpus_manifest_sha256 differs between runs: {listed}")
