"""`mambomeme tui` (the default command), `bench tui`, `feedback delete|report|export`."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from mambomeme.errors import MamboMemeError
from mambomeme.tui import feedback

if TYPE_CHECKING:
    from mambomeme.feedback import LineProblem, SliceIndex

ENV_FAKE = "MAMBOMEME_TUI_FAKE_ENGINE"
ENV_VIEWER = "MAMBOMEME_VIEWER"
ENV_TIMING = "MAMBOMEME_TUI_TIMING"


class TuiError(MamboMemeError):
    """The TUI cannot start with the given arguments."""


def add_tui_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--build", type=Path, help="built corpus directory (default build/<base.corpus>)"
    )
    p.add_argument("--params", type=Path, default=Path("params.yaml"))
    p.add_argument("--home", type=Path, help="open the library in this folder (mambomeme add)")
    p.add_argument("--library", action="store_true", help="open your library inside the repo")
    p.add_argument("--limit", type=int, default=20, help="results per search (default 20)")
    p.add_argument(
        "--system",
        default=None,
        help="system once semantic search is ready (default: the shipped system and its "
        "frozen selection, mambomeme/search/shipped.py)",
    )
    p.add_argument(
        "--print-choice",
        action="store_true",
        help="print the chosen image path on exit (composes like fzf)",
    )
    p.add_argument(
        "--feedback",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=f"record local interaction events (off by default; env {feedback.ENV_ENABLE}=1)",
    )
    p.add_argument(
        "--feedback-file",
        type=Path,
        help="events file (default $XDG_STATE_HOME/mambomeme/events.jsonl)",
    )
    p.add_argument("--viewer", help=f"image viewer command (default xdg-open; env {ENV_VIEWER})")
    p.add_argument("--no-preview", action="store_true", help="start with the preview pane hidden")
    p.add_argument(
        "--graphics",
        choices=("auto", "kitty", "iterm2", "blocks"),
        help="how previews are drawn: the Kitty or iTerm2 graphics protocol, or half blocks "
        "(default: params tui.graphics, else auto: detected from TERM, TERM_PROGRAM, ...)",
    )
    p.add_argument("--query", "-q", default="", metavar="TEXT", help="search TEXT at start")
    p.add_argument(
        "--live",
        action="store_true",
        help="search as you type, after a short pause (LIVE_DEBOUNCE_S in mambomeme/tui/app.py)",
    )
    p.add_argument("--timing-file", type=Path, help=argparse.SUPPRESS)  # latency harness
    p.add_argument("--fake-engine", action="store_true", help=argparse.SUPPRESS)  # tests only


def register(sub: Any) -> None:
    p = sub.add_parser("tui", help="open the search UI (the default command)")
    add_tui_arguments(p)
    p.set_defaults(handler=run_tui)

    bench = _bench_subparsers(sub)
    b = bench.add_parser("tui", help="submit-to-render latency of the TUI in an 80x24 PTY")
    b.add_argument(
        "--build", type=Path, help="built corpus directory (default build/<base.corpus>)"
    )
    b.add_argument("--params", type=Path, default=Path("params.yaml"))
    b.add_argument(
        "--queries",
        type=Path,
        default=Path("benchmarks/fixture/queries.jsonl"),
        help="queries.jsonl of a dev benchmark (its `text` field)",
    )
    b.add_argument("--warmups", type=int, default=100)
    b.add_argument("--measured", type=int, default=1000)
    b.add_argument("--timeout", type=float, default=10.0, help="seconds per search")
    b.add_argument("--out", type=Path, help="default reports/latency-tui-<corpus>.json")
    b.add_argument("--fake-engine", action="store_true", help=argparse.SUPPRESS)
    b.set_defaults(handler=run_bench)

    f = sub.add_parser("feedback", help="local interaction feedback")
    fsub = f.add_subparsers(dest="feedback_command", required=True)
    d = fsub.add_parser("delete", help="delete the local events file now")
    d.add_argument("--feedback-file", type=Path)
    d.set_defaults(handler=run_feedback_delete)
    r = fsub.add_parser("report", help="interaction metrics from the local events file")
    r.add_argument("--feedback-file", type=Path)
    r.add_argument("--since", type=int, metavar="DAYS", help="only the last DAYS days (<= 30)")
    r.add_argument("--json", action="store_true", help="print the report as JSON")
    r.add_argument(
        "--out", type=Path, metavar="DIR", help="write feedback-report.json and the rank plot"
    )
    r.add_argument(
        "--benchmark",
        type=Path,
        metavar="DIR",
        help="slices from DIR/queries.jsonl (default: params evaluation.benchmark when readable)",
    )
    r.add_argument("--params", type=Path, default=Path("params.yaml"))
    r.set_defaults(handler=run_feedback_report)
    e = fsub.add_parser("export", help="write a copy of the events for sharing (asks first)")
    e.add_argument("--feedback-file", type=Path)
    e.add_argument("--out", type=Path, required=True, metavar="FILE", help="a new file")
    e.add_argument("--yes", action="store_true", help="confirm without a prompt (scripts)")
    e.add_argument(
        "--with-queries", action="store_true", help="include query text (left out by default)"
    )
    e.set_defaults(handler=run_feedback_export)


def _bench_subparsers(sub: Any) -> Any:
    """The `bench` command's sub-commands, shared with other modules that add `bench <x>`."""
    existing = sub.choices.get("bench")
    if existing is None:
        existing = sub.add_parser("bench", help="performance benchmarks")
        return existing.add_subparsers(dest="bench_command", required=True)
    for action in existing._actions:  # argparse keeps the sub-command action only here
        if isinstance(action, argparse._SubParsersAction):
            return action
    return existing.add_subparsers(dest="bench_command", required=True)


def _params(path: Path) -> dict[str, Any]:
    from mambomeme.config import load_params

    return load_params(path)


def resolve_build(build: Path | None, params: dict[str, Any] | None) -> Path:
    """--build, else the serving build of `params` (the current release when one is published)."""
    if build is not None:
        return build
    if params is None:
        raise TuiError("--build: no build directory given and no params file to find one")
    from mambomeme.serving import serving_dir

    return serving_dir(params, None)[0]  # the current release when one is published


def _terminal() -> tuple[TextIO, TextIO, list[TextIO]]:
    """stdin/stdout when they are a terminal, else /dev/tty, so --print-choice output can pipe."""
    if sys.stdin.isatty() and sys.stdout.isatty():
        return sys.stdin, sys.stdout, []
    try:
        tty_in = open("/dev/tty", encoding="utf-8")  # noqa: SIM115 - closed by the caller
        tty_out = open("/dev/tty", "w", encoding="utf-8")  # noqa: SIM115
    except OSError as exc:
        raise TuiError(f"the TUI needs a terminal: {exc}") from exc
    return tty_in, tty_out, [tty_in, tty_out]


def run_tui(args: argparse.Namespace) -> int:
    from mambomeme.search.systems import DEFAULT_SYSTEM
    from mambomeme.serving import default_system, serving_target
    from mambomeme.tui.app import ENV_TEST_RAISE, TuiOptions, run_on_terminal
    from mambomeme.tui.backend import FakeBackend, LazyEngine

    fake = args.fake_engine or os.environ.get(ENV_FAKE) == "1"
    # the repository's build with a params.yaml here, else the user's library (mambomeme add)
    target = None if fake else serving_target(args.build, args.params, args.home, args.library)
    params = None if target is None else target.params
    build = resolve_build(args.build, params) if target is None else target.build
    if fake:
        args.system = args.system or DEFAULT_SYSTEM
        build.mkdir(parents=True, exist_ok=True)
        fake_params = {
            "dense_delay_s": float(os.environ.get("MAMBOMEME_FAKE_DENSE_DELAY", "0.3")),
            "search_delay_s": float(os.environ.get("MAMBOMEME_FAKE_SEARCH_DELAY", "0")),
        }
        backend: LazyEngine = FakeBackend(build, fake_params, args.system)
    else:
        if not build.is_dir():
            raise TuiError(f"--build: {build} is not a built corpus directory (run `dvc repro`)")
        assert params is not None and target is not None
        if args.system is None:  # the shipped system with its frozen selection
            params, args.system, source = default_system(target)
            print(f"mambomeme: serving {args.system} ({source})", file=sys.stderr)
        backend = LazyEngine(build, params, args.system)
    if args.limit < 1:
        raise TuiError(f"--limit: must be at least 1, got {args.limit}")
    from mambomeme.tui.graphics import choose

    setting, source = args.graphics, "--graphics"
    if setting is None:
        setting, source = str((params or {}).get("tui", {}).get("graphics", "auto")), "tui.graphics"
    protocol = choose(setting, os.environ, source)
    enabled = feedback.enabled_from_env() if args.feedback is None else bool(args.feedback)
    versions = feedback.serving_versions(build, params, args.system)
    log = feedback.FeedbackLog(args.feedback_file or feedback.default_path(), versions, enabled)
    log.prune()
    viewer = args.viewer or os.environ.get(ENV_VIEWER) or "xdg-open"
    source = "--viewer" if args.viewer else ENV_VIEWER if os.environ.get(ENV_VIEWER) else "viewer"
    try:
        viewer_argv = tuple(shlex.split(viewer))
    except ValueError as exc:  # an unbalanced quote
        raise TuiError(f"{source}: cannot split {viewer!r} into a command: {exc}") from None
    timing = args.timing_file or (
        Path(os.environ[ENV_TIMING]) if os.environ.get(ENV_TIMING) else None
    )
    options = TuiOptions(
        build_dir=build.resolve(),
        release=build.name,
        limit=args.limit,
        system=args.system,
        print_choice=args.print_choice,
        viewer=viewer_argv,
        timing_file=timing,
        show_preview=not args.no_preview,
        raise_in=os.environ.get(ENV_TEST_RAISE, ""),
        query=args.query,
        live=args.live,
        graphics=protocol,
    )
    tty_in, tty_out, to_close = _terminal()
    try:
        code, chosen = run_on_terminal(backend, options, log, tty_in, tty_out)
    finally:
        for handle in to_close:
            handle.close()
    if chosen is not None:
        print(chosen)
    return code


def run_bench(args: argparse.Namespace) -> int:
    from mambomeme.tui.harness import BenchConfig, run_benchmark

    fake = args.fake_engine
    params = None if fake else _params(args.params)
    build = resolve_build(args.build, params)
    out = args.out or Path("reports") / f"latency-tui-{build.name}.json"
    seed = int(params["base"]["seed"]) if params is not None else 0
    config = BenchConfig(
        build=build,
        params=args.params,
        queries=args.queries,
        warmups=args.warmups,
        measured=args.measured,
        timeout_s=args.timeout,
        seed=seed,
        fake_engine=fake,
    )
    report = run_benchmark(config, lambda line: print(f"bench tui: {line}", file=sys.stderr))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    inside = report["inside"]
    print(
        f"{out}: p50 {inside['p50_ms']:.1f} ms, p95 {inside['p95_ms']:.1f} ms, "
        f"p99 {inside['p99_ms']:.1f} ms, error rate {report['error_rate']:.4f} "
        f"({report['errors']}/{report['measured']})"
    )
    return 0


def run_feedback_delete(args: argparse.Namespace) -> int:
    path = args.feedback_file or feedback.default_path()
    print(f"deleted {path}" if feedback.delete_events(path) else f"no events file at {path}")
    return 0


def _print_skipped(path: Path, problems: Sequence[LineProblem]) -> None:
    for problem in problems:
        print(f"{path}:{problem.line}: skipped: {problem.reason}", file=sys.stderr)


def _report_slices(benchmark: Path | None, params: Path) -> tuple[SliceIndex | None, str]:
    """The benchmark slice index: --benchmark must load; the params default may be absent."""
    import yaml

    from mambomeme import feedback as feedback_report

    if benchmark is not None:
        return feedback_report.load_slices(benchmark), ""
    try:
        bench = Path(_params(params)["evaluation"]["benchmark"])
        return feedback_report.load_slices(bench), ""
    except (MamboMemeError, KeyError, TypeError, yaml.YAMLError) as exc:
        return None, f"none (no readable evaluation.benchmark in {params}: {exc})"


def run_feedback_report(args: argparse.Namespace) -> int:
    """Print the metrics (text or --json); exit 1 when there are no events to count."""
    from mambomeme import feedback as feedback_report

    path = args.feedback_file or feedback.default_path()
    now = feedback.utc_now()
    try:
        selection = feedback_report.select_events(path, now, args.since)
    except feedback_report.NoEventsError as exc:
        _print_skipped(path, exc.problems)
        print(f"mambomeme: feedback report: {exc}", file=sys.stderr)
        return 1
    _print_skipped(path, selection.problems)
    slices, note = _report_slices(args.benchmark, args.params)
    report = feedback_report.build_report(selection, now, args.since, slices, note)
    data = report.to_dict()
    if args.json:
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        print(feedback_report.render_text(report), end="")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        out_json = args.out / "feedback-report.json"
        out_png = args.out / "feedback-chosen-rank.png"
        out_json.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", "utf-8")
        out_png.write_bytes(feedback_report.chosen_rank_png(report))
        print(f"wrote {out_json} and {out_png}", file=sys.stderr if args.json else sys.stdout)
    return 0


def run_feedback_export(args: argparse.Namespace) -> int:
    """Copy the events to a new file after an explicit yes; nothing is ever uploaded."""
    from mambomeme import feedback as feedback_report

    path = args.feedback_file or feedback.default_path()
    try:
        selection = feedback_report.select_events(path, feedback.utc_now())
    except feedback_report.NoEventsError as exc:
        _print_skipped(path, exc.problems)
        print(f"mambomeme: feedback export: {exc}", file=sys.stderr)
        return 1
    _print_skipped(path, selection.problems)
    feedback_report.ensure_new(args.out)
    what = "WITH query text" if args.with_queries else "without query text"
    count = len(selection.events)
    if not args.yes:
        if not sys.stdin.isatty():
            print(
                "mambomeme: feedback export: not confirmed: stdin is not a terminal, so there is "
                "no one to ask; pass --yes to confirm (query text is left out unless "
                "--with-queries). Nothing was written.",
                file=sys.stderr,
            )
            return 2
        answer = input(
            f"Write {count} events from {path} to {args.out} ({what}) for you to share? "
            "Nothing is uploaded. [y/N] "
        )
        if answer.strip().lower() not in {"y", "yes"}:
            print("not confirmed; nothing was written")
            return 1
    written = feedback_report.write_export(selection.events, args.out, args.with_queries)
    print(f"wrote {written} events to {args.out} ({what}); nothing was uploaded")
    return 0
