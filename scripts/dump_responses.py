"""Every engine response for the dev and fixture benchmark queries, as JSON, for A/B identity
checks of engine changes that must not move results (docs/scaling.md):

    python scripts/dump_responses.py BUILD_DIR OUT.json [--params params.yaml] [--systems S ...]
        [--benchmarks dev-v1 fixture reports/memes-10k/benchmark ...] [--shipped REPORTS_DIR]

`--shipped` adds the system a user is served (search/shipped.py: the selection in REPORTS_DIR,
usefulness model included) as the system "shipped".

Run it once with the old code (e.g. a `git worktree` of the parent commit on PYTHONPATH) and
once with the new, on the same build, then `cmp` the two files. Each line of the output is one
request: system, query id, limit, empty reason, and per result the item id, fused score, route
hits (route, rank, raw score), matched fields and shown metadata, all as repr so floats are
compared exactly.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SYSTEMS = ("bm25", "bm25+typo", "hybrid", "bm25-no-knowledge")


def main() -> int:
    from mambomeme.config import load_params
    from mambomeme.evaluation.benchmark import load_benchmark
    from mambomeme.search.engine import Engine
    from mambomeme.search.results import Filters
    from mambomeme.search.shipped import shipped

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--params", type=Path, default=ROOT / "params.yaml")
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS), help="systems to dump")
    parser.add_argument("--benchmarks", nargs="+", default=["dev-v1", "fixture"])
    parser.add_argument("--shipped", type=Path, help="reports folder whose selection is served")
    args = parser.parse_args()
    params = load_params(args.params)
    engines = [(system, Engine.open(args.build, params), system) for system in args.systems]
    if args.shipped is not None:
        served = shipped(params, args.build, args.shipped)
        engines.append(("shipped", Engine.open(args.build, served.params), served.system))
    folders = [Path(n) if "/" in n else ROOT / "benchmarks" / n for n in args.benchmarks]
    queries = [q for folder in folders for q in load_benchmark(folder).queries]
    lines = []
    for label, engine, system in engines:
        for query in queries:
            for limit in (10, 100):
                response = engine.search(
                    query.all_cues, limit=limit, filters=Filters(**query.filter_dict), system=system
                )
                results = [
                    [
                        r.item_id,
                        repr(r.fused_score),
                        [repr(h) for h in r.hits],
                        [repr(m) for m in r.matched_fields],
                        r.title,
                        r.template,
                        r.kind,
                        r.preview,
                        r.attribution,
                        r.license,
                    ]
                    for r in response.results
                ]
                lines.append(json.dumps([label, query.qid, limit, response.empty_reason, results]))
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(lines)} requests -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
