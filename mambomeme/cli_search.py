"""`mambomeme search`: one request through the engine, printed as a table or as JSON."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

from mambomeme.config import load_params
from mambomeme.search.results import Filters, SearchResponse
from mambomeme.serving import serving_dir


def register(sub: Any) -> None:
    p = sub.add_parser("search", help="search the built corpus")
    p.add_argument("query", help="what you remember; alternate cues separated by '|'")
    p.add_argument("--cue", action="append", default=[], help="an extra alternate cue (repeatable)")
    p.add_argument("--limit", type=int, default=10)
    p.add_argument(
        "--system", default="hybrid", help="bm25 | bm25+typo | dense | hybrid | hybrid-no-<field>"
    )
    p.add_argument("--kind", choices=["template", "meme"])
    p.add_argument("--language")
    p.add_argument("--template")
    p.add_argument("--build", type=Path, help="build directory (default build/<base.corpus>)")
    p.add_argument("--params", type=Path, default=Path("params.yaml"))
    p.add_argument("--json", action="store_true", help="print the full response as JSON")
    p.set_defaults(handler=run_search)


def split_cues(query: str, extra: list[str]) -> list[str]:
    return [c for c in (part.strip() for part in query.split("|")) if c] + list(extra)


def run_search(args: argparse.Namespace) -> int:
    from mambomeme.search.engine import Engine

    params = load_params(args.params)
    served, label = serving_dir(params, args.build)
    engine = Engine.open(served, params)
    filters = Filters(kind=args.kind, language=args.language, template=args.template)
    spec = engine.system(args.system)
    if "dense" in spec.routes:  # load the model first so the printed time is the search's own
        engine.load_dense(spec.dense_variant)
    response = engine.search(split_cues(args.query, args.cue), args.limit, filters, args.system)
    if args.json:
        print(
            json.dumps({"release": label, **response_json(response)}, indent=2, ensure_ascii=False)
        )
    else:
        print(format_table(response) + f"\nserved from {label}")
    return 0


def response_json(response: SearchResponse) -> dict[str, Any]:
    data = dataclasses.asdict(response)
    for result, raw in zip(data["results"], response.results, strict=True):
        result["routes"] = list(raw.routes)
        result["cues"] = sorted({h.cue for h in raw.hits})
    return data


def format_table(response: SearchResponse) -> str:
    if not response.results:
        return (
            f"no confident match ({response.empty_reason}); "
            "try other words, a quote, or what the picture shows"
        )
    lines = []
    for r in response.results:
        evidence = ", ".join(f"{h.route}#{h.rank}({h.score:.3g})" for h in r.hits)
        fields = ", ".join(m.field for m in r.matched_fields) or "-"
        lines.append(f"{r.rank:>2}. {r.item_id}  {r.title}  [{r.template or r.kind}]")
        lines.append(f"    fused {r.fused_score:.4f}  routes {evidence}  matched {fields}")
    total = response.timings_ms.get("total", 0.0)
    lines.append(f"{len(response.results)} results, system {response.system}, {total:.1f} ms")
    return "\n".join(lines)
