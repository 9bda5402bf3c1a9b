"""`mambomeme pool`, `mambomeme import-annotations`, `mambomeme adjudicate` (docs/annotation.md).

    mambomeme pool --benchmark DIR --out pools/NAME [--config DIR/pool.yaml] [--build DIR]
                   [--judgements judgements/NAME] [--judged BENCHMARK_DIR]
    mambomeme import-annotations --pool pools/NAME --annotator annotator-a FILE --out CSV
    mambomeme import-annotations --pool pools/NAME --annotator annotator-a FILE --check
    mambomeme adjudicate --benchmark DIR --pool pools/NAME --judgements judgements/NAME
                   --sets-dir judgement-sets/NAME --queue-out pools/NAME-queue
                   --out reports/.../benchmark [--build DIR]

The DVC stages `pool` and `adjudicate` (stages/pool.py, stages/adjudicate.py) call the same
functions with paths from params.yaml. `adjudicate` exits 3 (and writes the third annotator's
blind export to --queue-out) while disagreement-queue pairs have no grade in
judgements/NAME/annotator-c.csv."""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mambomeme.config import DEFAULT_PARAMS, build_dir, load_params
from mambomeme.corpus.schema import Item
from mambomeme.errors import BenchmarkError
from mambomeme.evaluation import adjudicate as adj
from mambomeme.evaluation import annotations as sheets
from mambomeme.evaluation import export, pooling
from mambomeme.evaluation import judgement_sets as js
from mambomeme.evaluation.benchmark import Query, load_benchmark

THIRD = "annotator-c"


def register(subparsers: Any) -> None:
    pool = subparsers.add_parser("pool", help="pool candidates and write blind annotator files")
    pool.add_argument("--benchmark", type=Path, required=True, help="folder with queries.jsonl")
    pool.add_argument("--config", type=Path, help="pool config (default: BENCHMARK/pool.yaml)")
    pool.add_argument("--out", type=Path, required=True, help="new pool folder, e.g. pools/dev-v1")
    pool.add_argument("--build", type=Path, help="build dir (default: build/<base.corpus>)")
    pool.add_argument("--judged", type=Path, help="benchmark whose judged pairs are not re-asked")
    pool.add_argument(
        "--judgements", type=Path, help="annotator-*.csv folder: pairs all graded are not re-asked"
    )
    pool.add_argument("--params", type=Path, default=DEFAULT_PARAMS)
    pool.set_defaults(handler=pool_command)

    imp = subparsers.add_parser("import-annotations", help="validate and store an annotator file")
    imp.add_argument("file", type=Path, help="filled sheet.csv or a Label Studio JSON export")
    imp.add_argument("--pool", type=Path, required=True, help="pool folder (or a queue folder)")
    imp.add_argument("--annotator", required=True, help="annotator folder name in the pool")
    where = imp.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", type=Path, help="canonical CSV to create (never overwritten)")
    where.add_argument("--check", action="store_true", help="only validate FILE in place")
    imp.set_defaults(handler=import_command)

    adjud = subparsers.add_parser("adjudicate", help="agreement, queue, freeze a judgement set")
    adjud.add_argument("--benchmark", type=Path, required=True)
    adjud.add_argument("--config", type=Path, help="pool config (default: BENCHMARK/pool.yaml)")
    adjud.add_argument("--pool", type=Path, required=True)
    adjud.add_argument("--judgements", type=Path, required=True, help="annotator-*.csv folder")
    adjud.add_argument(
        "--sets-dir", type=Path, required=True, help="judgement-set versions, e.g. judgement-sets/B"
    )
    adjud.add_argument("--queue-out", type=Path, required=True, help="third annotator's export")
    adjud.add_argument("--out", type=Path, required=True, help="scored benchmark folder to write")
    adjud.add_argument("--build", type=Path, help="build dir (default: build/<base.corpus>)")
    adjud.add_argument("--params", type=Path, default=DEFAULT_PARAMS)
    adjud.set_defaults(handler=adjudicate_command)


def preview_path(build: Path, item: Item) -> Path | None:
    """The item's preview file on disk (relative to the build dir, or absolute), if present."""
    if not item.preview:
        return None
    path = Path(item.preview)
    path = path if path.is_absolute() else build / path
    return path if path.is_file() else None


def _config_path(benchmark: Path, given: Path | None) -> Path:
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


def _open_engine(args: argparse.Namespace, systems: Sequence[str]) -> tuple[Any, Any, Path]:
    from mambomeme.search.engine import Engine
    from mambomeme.search.results import Filters

    params = load_params(args.params)
    build = args.build or build_dir(params)
    engine = Engine.open(build, params)
    if any(engine.system(s).routes.count("dense") for s in systems):
        engine.load_dense()

    def search(query: Query, system: str) -> list[str]:
        found = engine.search(query.all_cues, 10, Filters(**query.filter_dict), system)
        return [r.item_id for r in found.results]

    return engine, search, build


def pool_command(args: argparse.Namespace) -> int:
    config_path = _config_path(args.benchmark, args.config)
    config = pooling.load_pool_config(config_path)
    engine, search, build = _open_engine(args, config.systems)
    manifest = make_pool(
        args.benchmark,
        config_path,
        args.out,
        search,
        engine.items,
        build,
        judged_pairs(args.judged)
        | judged_by_all(args.judgements, [name for name, _ in config.annotators]),
    )
    print(
        f"pool {args.out}: {manifest['pairs']} (query, item) pairs, {manifest['items']} items; "
        f"{manifest['already_judged']} already judged, {manifest['to_annotate']} new for "
        f"annotators {', '.join(manifest['annotators'])}"
    )
    return 0


def import_command(args: argparse.Namespace) -> int:
    expected = sheets.assigned_pairs(args.pool, args.annotator)
    if args.check:
        labels = sheets.read_labels(args.file, expected)
        print(f"{args.file}: {len(labels)} labels, valid")
        return 0
    count = sheets.import_labels(args.file, args.out, expected)
    print(f"{args.out}: {count} labels imported from {args.file}")
    return 0


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


def _sample(pairs: set[tuple[str, str]]) -> list[list[str]]:
    return [list(p) for p in sorted(pairs)[:10]]


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
) -> tuple[int, str]:
    """(exit code, message): 0 = a judgement set verified or frozen and the scored benchmark
    written to `scored_out`; 3 = waiting for annotators (nothing frozen, nothing scored).

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
        return 3, (
            f"waiting for annotator files {', '.join(missing)} (blind exports in "
            f"{', '.join(str(pool_dir / n) for n in names)}/)"
        )
    first, second = (sheets.read_labels(files[n]) for n in names)
    both = set(first) & set(second)
    one_only = set(first) ^ set(second)
    labels = {
        "a": {k: v for k, v in first.items() if k in both},
        "b": {k: v for k, v in second.items() if k in both},
    }
    queue = adj.disagreements(labels["a"], labels["b"])
    third_file = judgements / f"{THIRD}.csv"
    third = sheets.read_labels(third_file) if third_file.is_file() else {}
    pending = [k for k in queue if k not in third]
    if pending:
        _queue_export(queue_out, pending, queries, config, items, build)
        return 3, (
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
    }
    record = js.write_scored_benchmark(
        benchmark_dir, set_dir, scored_out, {"inputs": inputs, "coverage": coverage}
    )
    state = "frozen (new version)" if created else "verified: identical to the existing set"
    return 0, (
        f"judgement set {set_dir}: {state}; {len(both)} pairs, {len(queue)} adjudicated; "
        f"pool {len(pool)} pairs, {coverage['pool_unjudged']} not yet judged (a new round), "
        f"{coverage['judged_outside_pool']} judged pairs outside the pool; scored benchmark "
        f"{scored_out} ({record['judgement_set']})"
    )


def adjudicate_command(args: argparse.Namespace) -> int:
    from mambomeme.search.items import ItemTable

    params = load_params(args.params)
    build = args.build or build_dir(params)
    code, message = adjudicate_run(
        args.benchmark,
        _config_path(args.benchmark, args.config),
        args.pool,
        args.judgements,
        args.sets_dir,
        args.queue_out,
        args.out,
        ItemTable(build),
        build,
    )
    print(message)
    return code
