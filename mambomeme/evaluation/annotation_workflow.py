"""The annotation workflow (docs/annotation.md): pool a benchmark's candidates into blind
annotator files, and adjudicate the annotators' files into a frozen judgement set and a scored
benchmark. `mambomeme pool` / `adjudicate` (cli/annotate.py) and the DVC stages `pool` and
`adjudicate` (stages/pool.py, stages/adjudicate.py) call these functions. `adjudicate_run` raises
AnnotationsPendingError (exit 3 from both) after writing the third annotator's blind export while
disagreement-queue pairs have no grade in judgements/NAME/annotator-c.csv."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mambomeme.config import build_dir
from mambomeme.corpus.schema import Item
from mambomeme.errors import AnnotationsPendingError, BenchmarkError
from mambomeme.evaluation import adjudicate as adj
from mambomeme.evaluation import annotations as sheets
from mambomeme.evaluation import export, pooling
from mambomeme.evaluation import judgement_sets as js
from mambomeme.evaluation.benchmark import Query, load_benchmark
from mambomeme.evaluation.split import read_split, split_about, write_no_check

THIRD = "annotator-c"


def preview_path(build: Path, item: Item) -> Path | None:
    """The item's preview file on disk (relative to the build dir, or absolute), if present."""
    if not item.preview:
        return None
    path = Path(item.preview)
    path = path if path.is_absolute() else build / path
    return path if path.is_file() else None


def pool_config_path(benchmark: Path, given: Path | None) -> Path:
    """The pool config: `given`, else BENCHMARK/pool.yaml."""
    return given if given is not None else benchmark / "pool.yaml"


def _exact_targets(config_path: Path, config: pooling.PoolConfig) -> dict[str, list[list[str]]]:
    if not config.exact_targets:
        return {}
    return pooling.read_exact_targets(config_path.parent / config.exact_targets)


def judged_pairs(benchmark_dir: Path | None) -> frozenset[tuple[str, str]]:
    if benchmark_dir is None:
        return frozenset()
    bench = load_benchmark(benchmark_dir)
    return frozenset((q, i) for q, grades in bench.qrels.items() for i in grades)


def annotator_files(judgements: Path, names: Sequence[str]) -> dict[str, Path]:
    return {name: Path(judgements) / f"{name}.csv" for name in names}


def judged_by_all(judgements: Path | None, names: Sequence[str]) -> frozenset[tuple[str, str]]:
    """The (qid, item) pairs that every annotator's file in `judgements` grades (validated);
    none while any of the files is missing. These are not asked again."""
    if judgements is None:
        return frozenset()
    files = annotator_files(judgements, names)
    if not all(path.is_file() for path in files.values()):
        return frozenset()
    pairs = [set(sheets.read_labels(path)) for path in files.values()]
    return frozenset(set.intersection(*pairs))


def make_pool(
    benchmark_dir: Path,
    config_path: Path,
    out: Path,
    search: Any,
    items: Mapping[str, Item],
    build: Path,
    judged: frozenset[tuple[str, str]] = frozenset(),
) -> dict[str, Any]:
    """Pool every query and write pool.jsonl, manifest.json and one export per annotator.

    pool.jsonl holds every candidate (with `judged`); the annotator exports hold only the
    candidates not in `judged` (an empty sheet when nothing is new). Deterministic: the same
    queries, config, rankings and judged pairs give the same files.
    `search(query, system) -> item ids` (the engine in the CLI, any callable in tests).
    """
    queries = pooling.read_queries(benchmark_dir / "queries.jsonl")
    config = pooling.load_pool_config(config_path)
    exact = _exact_targets(config_path, config)
    rankings = pooling.collect_rankings(queries, config.systems, search)
    allowed = _partition_filter(config, items)
    pool, left_out = pooling.build_pool(
        queries, rankings, config, lambda i: i in items, frozenset(), exact, allowed
    )
    ask = [c for c in pool if (c.qid, c.item_id) not in judged]
    by_qid = {q.qid: q for q in queries}
    new_per_query = {q.qid: sum(c.qid == q.qid for c in ask) for q in queries}
    manifest = {
        "benchmark": str(benchmark_dir),
        "systems": list(config.systems),
        "depth": config.depth,
        "annotators": dict(config.annotators),
        "pairs": len(pool),
        "items": len({c.item_id for c in pool}),
        "per_query": {q.qid: sum(c.qid == q.qid for c in pool) for q in queries},
        "already_judged": len(pool) - len(ask),
        "to_annotate": len(ask),
        "to_annotate_per_query": {q: n for q, n in new_per_query.items() if n},
        "partition": config.partition or "all",
        "left_out_other_partition": len(left_out),
        "queries_sha256": _sha(benchmark_dir / "queries.jsonl"),
        "config_sha256": _sha(config_path),
    }
    pooling.write_pool(out, pool, manifest, judged)
    for name, seed in config.annotators:
        rows = export.sheet_rows(
            pooling.annotator_order(ask, seed),
            by_qid,
            items,
            lambda item: preview_path(build, item),
        )
        export.write_exports(out / name, name, seed, rows)
    return manifest


def _partition_filter(config: pooling.PoolConfig, items: Mapping[str, Item]) -> Any:
    if not config.families:
        return lambda item_id: True
    partitions = pooling.read_partitions(Path(config.families))

    def allowed(item_id: str) -> bool:
        family = pooling.item_family(items[item_id].template_group)
        if family not in partitions:
            raise BenchmarkError(f"item {item_id}: family {family!r} is not in {config.families}")
        return partitions[family] == config.partition

    return allowed


def _sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def open_search(
    build: Path, params: Mapping[str, Any], systems: Sequence[str]
) -> tuple[Any, Callable[[Query, str], list[str]]]:
    """The engine over `build` and `search(query, system) -> the top 10 item ids` (the dense
    model loaded first when one of `systems` needs it)."""
    from mambomeme.search.engine import Engine
    from mambomeme.search.results import Filters

    engine = Engine.open(build, params)
    for system in systems:
        engine.load(system)

    def search(query: Query, system: str) -> list[str]:
        found = engine.search(query.all_cues, 10, Filters(**query.filter_dict), system)
        return [r.item_id for r in found.results]

    return engine, search


def pool_benchmark(
    benchmark_dir: Path,
    out: Path,
    params: dict[str, Any],
    build: Path | None = None,
    config_path: Path | None = None,
    judged: Path | None = None,
    judgements: Path | None = None,
) -> dict[str, Any]:
    """Pool `benchmark_dir` (config default: its pool.yaml) with the engine over `build` (default
    build/<base.corpus>) into `out`; the pairs that the benchmark `judged` holds or that every
    annotator's file in `judgements` grades are not asked again. Returns make_pool's manifest."""
    config_path = pool_config_path(benchmark_dir, config_path)
    config = pooling.load_pool_config(config_path)
    build = build or build_dir(params)
    engine, search = open_search(build, params, config.systems)
    names = [name for name, _ in config.annotators]
    return make_pool(
        benchmark_dir,
        config_path,
        out,
        search,
        engine.items,
        build,
        judged_pairs(judged) | judged_by_all(judgements, names),
    )


def pool_summary(out: Path, manifest: Mapping[str, Any]) -> str:
    """One line on what `pool_benchmark` wrote to `out`."""
    return (
        f"pool {out}: {manifest['pairs']} (query, item) pairs, {manifest['items']} items; "
        f"{manifest['already_judged']} already judged, {manifest['to_annotate']} new for "
        f"annotators {', '.join(manifest['annotators'])}"
    )


def _queue_export(
    queue_out: Path,
    pending: Sequence[tuple[str, str]],
    queries: Sequence[Query],
    config: pooling.PoolConfig,
    items: Mapping[str, Item],
    build: Path,
) -> None:
    """The third annotator's blind export of `pending` in queue_out/annotator-c/ (kept if it
    already holds exactly those pairs; another queue there is an error, never overwritten)."""
    folder = queue_out / THIRD
    if (folder / "assignment.json").exists():
        if sorted(map(tuple, sheets.assigned_pairs(queue_out, THIRD))) != sorted(pending):
            raise BenchmarkError(
                f"{folder} holds another queue than the {len(pending)} pairs now pending; move "
                "it away (once nobody is filling its sheet) and rerun"
            )
        return
    by_qid = {q.qid: q for q in queries}
    ordered = pooling.annotator_order(
        [pooling.Candidate(q, i, ()) for q, i in pending],
        seed=sum(s for _, s in config.annotators),
    )
    rows = export.sheet_rows(ordered, by_qid, items, lambda it: preview_path(build, it))
    export.write_exports(folder, THIRD, 0, rows)


@dataclass(frozen=True)
class Adjudication:
    """What adjudicate_run did: the judgement set `set_dir` (newly frozen when `created`, else
    verified identical), `pairs` judged by both annotators of which `adjudicated` went to the
    third, the pool `coverage` and the scored benchmark written to `scored_out`."""

    set_dir: Path
    created: bool
    pairs: int
    adjudicated: int
    coverage: Mapping[str, Any]
    scored_out: Path
    judgement_set: str

    def summary(self) -> str:
        state = (
            "frozen (new version)" if self.created else "verified: identical to the existing set"
        )
        return (
            f"judgement set {self.set_dir}: {state}; {self.pairs} pairs, {self.adjudicated} "
            f"adjudicated; pool {self.coverage['pool_pairs']} pairs, "
            f"{self.coverage['pool_unjudged']} not yet judged (a new round), "
            f"{self.coverage['judged_outside_pool']} judged pairs outside the pool; scored "
            f"benchmark {self.scored_out} ({self.judgement_set})"
        )


def _sample(pairs: set[tuple[str, str]]) -> list[list[str]]:
    return [list(p) for p in sorted(pairs)[:10]]


DROPPED_FILE = "dropped.jsonl"


def read_dropped(benchmark_dir: Path, qids: set[str]) -> dict[str, str]:
    """The benchmark's dropped.jsonl: queries removed after judging ({"qid", "reason"} a
    line; e.g. an answerable query no annotator graded any candidate of >= 2). Their graded
    rows stay in the annotator files (judgements are never deleted) and are left out of the
    set; a listed qid still in queries.jsonl is an error."""
    path = Path(benchmark_dir) / DROPPED_FILE
    if not path.is_file():
        return {}
    dropped: dict[str, str] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            qid, reason = str(row["qid"]), str(row["reason"])
        except (json.JSONDecodeError, KeyError, TypeError):
            raise BenchmarkError(
                f'{path}:{number}: expected {{"qid": ..., "reason": ...}}'
            ) from None
        if qid in qids:
            raise BenchmarkError(f"{path}:{number}: {qid!r} is dropped but still in queries.jsonl")
        dropped[qid] = reason
    return dropped


def _without(labels: Mapping[adj.Key, Any], dropped: Mapping[str, str]) -> dict[adj.Key, Any]:
    return {k: v for k, v in labels.items() if k[0] not in dropped}


def adjudicate_run(
    benchmark_dir: Path,
    config_path: Path,
    pool_dir: Path,
    judgements: Path,
    sets_dir: Path,
    queue_out: Path,
    scored_out: Path,
    items: Mapping[str, Item],
    build: Path,
    check_out: Path | None = None,
) -> Adjudication:
    """Verify or freeze the judgement set and write the scored benchmark to `scored_out`.
    A benchmark with a check split (split.yaml, evaluation/split.py) puts only its tune
    queries in `scored_out` and its check queries in `check_out`; without one, `check_out`
    (when given) gets only a note that there is no check split.
    Raises AnnotationsPendingError while waiting for annotators (nothing frozen, nothing scored):
    an annotator file is missing, or disagreement-queue pairs have no third grade (their blind
    export is written to `queue_out` first).

    The annotator files are validated on their own (judgements/<b>/annotator-*.csv), not
    against the current pool: a judged pair that the regenerated pool no longer holds is still
    a judgement, and pool pairs nobody judged yet are counted (a new round), not an error.
    Pairs only one of the two annotators graded are left out of the set and counted.
    """
    config = pooling.load_pool_config(config_path)
    if len(config.annotators) != 2:
        raise BenchmarkError(f"{config_path}: adjudication needs exactly two annotators")
    queries = pooling.read_queries(benchmark_dir / "queries.jsonl")
    name = str(json.loads((benchmark_dir / "benchmark.json").read_text("utf-8"))["name"])
    names = [n for n, _ in config.annotators]
    files = annotator_files(judgements, names)
    missing = [str(p) for p in files.values() if not p.is_file()]
    if missing:
        raise AnnotationsPendingError(
            f"waiting for annotator files {', '.join(missing)} (blind exports in "
            f"{', '.join(str(pool_dir / n) for n in names)}/)"
        )
    dropped = read_dropped(benchmark_dir, {q.qid for q in queries})
    first, second = (_without(sheets.read_labels(files[n]), dropped) for n in names)
    both = set(first) & set(second)
    one_only = set(first) ^ set(second)
    labels = {
        "a": {k: v for k, v in first.items() if k in both},
        "b": {k: v for k, v in second.items() if k in both},
    }
    queue = adj.disagreements(labels["a"], labels["b"])
    third_file = judgements / f"{THIRD}.csv"
    third = _without(sheets.read_labels(third_file), dropped) if third_file.is_file() else {}
    pending = [k for k in queue if k not in third]
    if pending:
        _queue_export(queue_out, pending, queries, config, items, build)
        raise AnnotationsPendingError(
            f"{len(pending)} of {len(queue)} disagreement-queue pairs have no third-annotator "
            f"grade: give {queue_out / THIRD}/ to a third annotator and have them write "
            f"{third_file}; nothing is frozen or scored until then"
        )
    if queue:
        labels["c"] = third
    inputs = {str(p): _sha(p) for p in [*files.values(), *([third_file] if queue else [])]}
    exact = _exact_targets(config_path, config)
    set_dir, created = js.freeze_version(
        sets_dir,
        name,
        lambda set_name: adj.set_files(benchmark_dir, set_name, queries, labels, exact, inputs),
    )
    pool = {(c.qid, c.item_id) for c in pooling.read_pool(pool_dir)}
    coverage = {
        "pool_pairs": len(pool),
        "judged_pairs": len(both),
        "pool_unjudged": len(pool - both),
        "pool_unjudged_sample": _sample(pool - both),
        "judged_outside_pool": len(both - pool),
        "one_annotator_only": len(one_only),
        "one_annotator_only_sample": _sample(one_only),
        "dropped_queries": sorted(dropped),
    }
    base = {"inputs": inputs, "coverage": coverage}
    split = read_split(benchmark_dir)
    if split is None:
        record = js.write_scored_benchmark(benchmark_dir, set_dir, scored_out, base)
        if check_out is not None:
            write_no_check(check_out)
    else:
        if check_out is None:
            raise BenchmarkError(f"{benchmark_dir}: has a check split but no check folder given")
        written = {
            side: js.write_scored_benchmark(
                benchmark_dir, set_dir, out, {**base, "split": split_about(split, queries, side)},
                frozenset(q.qid for q in queries if split.side(q.family) == side),
            )
            for side, out in (("tune", scored_out), ("check", check_out))
        }  # fmt: skip
        record = written["tune"]
    return Adjudication(
        set_dir, created, len(both), len(queue), coverage, scored_out, record["judgement_set"]
    )
