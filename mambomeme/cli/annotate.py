"""`mambomeme pool`, `mambomeme import-annotations`, `mambomeme adjudicate` (docs/annotation.md).

    mambomeme pool --benchmark DIR --out pools/NAME [--config DIR/pool.yaml] [--build DIR]
                   [--judgements judgements/NAME] [--judged BENCHMARK_DIR]
    mambomeme import-annotations --pool pools/NAME --annotator annotator-a FILE --out CSV
    mambomeme import-annotations --pool pools/NAME --annotator annotator-a FILE --check
    mambomeme adjudicate --benchmark DIR --pool pools/NAME --judgements judgements/NAME
                   --sets-dir judgement-sets/NAME --queue-out pools/NAME-queue
                   --out reports/.../benchmark [--check-out reports/.../benchmark-check]
                   [--build DIR]

The work is evaluation/annotation_workflow.py's, which the DVC stages `pool` and `adjudicate`
call with paths from params.yaml. `adjudicate` exits 3 (after writing the third annotator's blind
export to --queue-out) while disagreement-queue pairs have no grade in
judgements/NAME/annotator-c.csv."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from mambomeme.config import DEFAULT_PARAMS, build_dir, load_params
from mambomeme.errors import AnnotationsPendingError
from mambomeme.evaluation import annotations as sheets
from mambomeme.evaluation.annotation_workflow import (
    adjudicate_run,
    pool_benchmark,
    pool_config_path,
    pool_summary,
)


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
    adjud.add_argument(
        "--check-out", type=Path, help="the check side's folder (a benchmark with split.yaml)"
    )
    adjud.add_argument("--build", type=Path, help="build dir (default: build/<base.corpus>)")
    adjud.add_argument("--params", type=Path, default=DEFAULT_PARAMS)
    adjud.set_defaults(handler=adjudicate_command)


def pool_command(args: argparse.Namespace) -> int:
    params = load_params(args.params)
    manifest = pool_benchmark(
        args.benchmark, args.out, params, args.build, args.config, args.judged, args.judgements
    )
    print(pool_summary(args.out, manifest))
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


def adjudicate_command(args: argparse.Namespace) -> int:
    from mambomeme.search.items import ItemTable

    params = load_params(args.params)
    build = args.build or build_dir(params)
    try:
        done = adjudicate_run(
            args.benchmark,
            pool_config_path(args.benchmark, args.config),
            args.pool,
            args.judgements,
            args.sets_dir,
            args.queue_out,
            args.out,
            ItemTable(build),
            build,
            args.check_out,
        )
    except AnnotationsPendingError as exc:
        print(exc)  # what to do next, on stdout: the annotator's instructions, not a failure
        return exc.exit_code
    print(done.summary())
    return 0
