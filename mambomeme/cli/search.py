"""`mambomeme search`: one request through the engine, printed as a table or as JSON."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mambomeme.errors import IndexError_
from mambomeme.search.cues import parse_cues
from mambomeme.search.results import Filters, SearchResponse
from mambomeme.serving import (
    Target,
    absolute_preview,
    default_system,
    gone_from_disk,
    library_damaged,
    serving_target,
)
from mambomeme.warm.client import warm_search


def register(sub: Any) -> None:
    p = sub.add_parser("search", help="search the built corpus")
    p.add_argument("query", type=text_arg(), help="what you remember; cues separated by '|'")
    p.add_argument(
        "--cue",
        action="append",
        default=[],
        type=text_arg(),
        help="an extra alternate cue (repeatable)",
    )
    p.add_argument(
        "--limit", type=positive_int, default=10, help="results to show (default 10; 1 or more)"
    )
    p.add_argument(
        "--system",
        default=None,
        type=text_arg(blank=False),
        help="bm25 | bm25+typo | dense | hybrid | hybrid-no-<field> (default: the shipped system "
        "with its frozen selection; see `served from` in the output)",
    )
    # filter values match without regard to case: --kind MEME, --template "john cena", --language EN
    p.add_argument(
        "--kind",
        type=str.casefold,
        choices=["template", "meme"],
        help="template or meme (any case)",
    )
    p.add_argument(
        "--language", type=text_arg(blank=False), help="BCP 47 code or its prefix (any case)"
    )
    p.add_argument("--template", type=text_arg(blank=False), help="a template's name (any case)")
    p.add_argument(
        "--build",
        type=Path,
        help="build directory (default: build/<base.corpus> with a params.yaml here, else the "
        "library that `mambomeme add` made)",
    )
    p.add_argument("--params", type=Path, default=Path("params.yaml"))
    p.add_argument("--home", type=Path, help="search the library in this folder")
    p.add_argument(
        "--library", action="store_true", help="search your library even inside the repository"
    )
    output = p.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the full response as JSON")
    output.add_argument("--paths", action="store_true", help="print the absolute image paths only")
    p.add_argument("-0", "--null", action="store_true", help="with --paths: end paths with NUL")
    p.add_argument(
        "--explain",
        action="store_true",
        help="also say which cues were searched (your cues and the engine's chat-spelling "
        "rewrite) and which cue each route hit came from",
    )
    p.set_defaults(handler=run_search, option_check=check_options)


def positive_int(value: str) -> int:
    """An argparse type: a whole number of at least 1 (`--limit -1` and `--limit=-1` alike)."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {number}")
    return number


def check_options(args: argparse.Namespace) -> str | None:
    """A usage problem no single option shows: an option that means nothing without another."""
    if args.null and not args.paths:
        return "argument -0/--null: only with --paths (it ends each printed path with NUL)"
    return None


def text_arg(blank: bool = True) -> Callable[[str], str]:
    """An argparse type: text that is valid UTF-8 (invalid bytes in argv arrive as lone
    surrogates) and, unless `blank`, not empty or only spaces. argparse turns the refusal
    into `argument --x: ...` and exit 2 before the engine opens."""

    def check(value: str) -> str:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise argparse.ArgumentTypeError(
                f"not valid UTF-8 (invalid byte at character {exc.start}): {ascii(value)}"
            ) from None
        if not blank and not value.strip():
            raise argparse.ArgumentTypeError("must not be empty (leave the option out for any)")
        return value

    return check


_SURROGATE = re.compile("[\ud800-\udfff]")


def emit(text: str) -> None:
    """Print `text` and a newline as UTF-8, whatever the locale or PYTHONIOENCODING: a lone
    surrogate (say, invalid bytes of a --build path echoed back) is written as its JSON/Python
    escape `\\udcxx`, never as raw invalid bytes, so --json output is always valid UTF-8."""
    line = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a text-only stream (tests' StringIO)
        sys.stdout.write(line)
        return
    sys.stdout.flush()
    buffer.write(line.encode("utf-8"))
    buffer.flush()


def emit_paths(paths: list[str], null: bool) -> None:
    """One path a line (or NUL-terminated), as the file system's own bytes (a name that is not
    UTF-8 comes back as it is on disk, so `xargs -0` can open it)."""
    end = b"\0" if null else b"\n"
    data = b"".join(os.fsencode(path) + end for path in paths)
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a text-only stream (tests' StringIO)
        sys.stdout.write(data.decode("utf-8", "replace"))
        return
    sys.stdout.flush()
    buffer.write(data)
    buffer.flush()


def split_cues(query: str, extra: list[str]) -> list[str]:
    return [*parse_cues(query), *extra]


def run_search(args: argparse.Namespace) -> int:
    """Results to stdout (a table, --json or --paths), everything else to stderr; exit 0 with
    results, 1 when nothing matched (cli.main: 2 on a usage error)."""
    target = serving_target(args.build, args.params, args.home, args.library)
    served, label, params = target.build, target.label, target.params
    system, shipped_from = args.system, "--system"
    if system is None:
        params, system, shipped_from = default_system(target)
    filters = Filters(kind=args.kind, language=args.language, template=args.template)
    cues = split_cues(args.query, args.cue)
    # the warm server's answer for exactly this build and code, else None: search here
    response = warm_search(served, params, system, cues, args.limit, filters)
    if response is None:
        response = search_here(target, params, system, cues, args.limit, filters)
    found = len(response.results)
    response = gone_from_disk(target, response)  # deleted since the last `mambomeme add`
    if len(response.results) < found:
        gone = found - len(response.results)
        print(f"mambomeme: {gone} result(s) left out: the file is gone from disk "
              "(`mambomeme add` updates the library)", file=sys.stderr)  # fmt: skip
    if args.paths:
        emit_paths([absolute_preview(served, r.preview) for r in response.results], args.null)
    elif args.json:
        data = {"release": label, "system_from": shipped_from, **response_json(response)}
        for result in data["results"]:
            result["preview"] = absolute_preview(served, result["preview"])
        emit(json.dumps(data, indent=2, ensure_ascii=False))
    elif response.results:
        if args.explain:
            emit(explain_cues(response))
        table = format_table(response, args.explain).splitlines()
        emit("\n".join(table[:-1]))
        print(f"{table[-1]}; served from {label} ({shipped_from})", file=sys.stderr)
    if not response.results and not args.json:
        if args.explain:
            print(explain_cues(response), file=sys.stderr)
        print(f"{format_table(response)}; served from {label}", file=sys.stderr)
    return 0 if response.results else 1


def search_here(
    target: Target,
    params: dict[str, Any],
    system: str,
    cues: list[str],
    limit: int,
    filters: Filters,
) -> SearchResponse:
    """The search in this process (no warm server, or it could not answer for this build)."""
    from mambomeme.search.engine import Engine

    try:
        engine = Engine.open(target.build, params)
        engine.items.check_filter_values(filters)  # --template Nope is an error, not "no match"
        engine.load(system)  # load any model first so the printed time is the search's own
        return engine.search(cues, limit, filters, system)
    except IndexError_ as exc:
        raise library_damaged(target, exc) from None  # library users get library wording


def response_json(response: SearchResponse) -> dict[str, Any]:
    data = dataclasses.asdict(response)
    for result, raw in zip(data["results"], response.results, strict=True):
        result["routes"] = list(raw.routes)
        result["cues"] = sorted({h.cue for h in raw.hits})
    return data


def explain_cues(response: SearchResponse) -> str:
    """The cues the engine searched, numbered as route hits name them (c0 is the main cue)."""
    typed = [f"c{i} {cue!r} (yours)" for i, cue in enumerate(response.cues)]
    added = [
        f"c{len(response.cues) + i} {cue!r} (chat spelling read as English)"
        for i, cue in enumerate(response.added_cues)
    ]
    return "cues: " + "; ".join(typed + added)


def format_table(response: SearchResponse, explain: bool = False) -> str:
    if not response.results:
        return (
            f"no confident match ({response.empty_reason}); "
            "try other words, a quote, or what the picture shows"
        )
    lines = []
    for r in response.results:
        evidence = ", ".join(
            f"{f'c{h.cue}:' if explain else ''}{h.route}#{h.rank}({h.score:.3g})" for h in r.hits
        )
        fields = ", ".join(m.field for m in r.matched_fields) or "-"
        lines.append(f"{r.rank:>2}. {r.item_id}  {r.title}  [{r.template or r.kind}]")
        lines.append(f"    fused {r.fused_score:.4f}  routes {evidence}  matched {fields}")
    total = response.timings_ms.get("total", 0.0)
    lines.append(f"{len(response.results)} results, system {response.system}, {total:.1f} ms")
    return "\n".join(lines)
