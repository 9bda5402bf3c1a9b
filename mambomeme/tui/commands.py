"""CLI registration: `mambomeme tui`, `mambomeme bench tui`, `mambomeme feedback delete`."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any, TextIO

from mambomeme.errors import MamboMemeError
from mambomeme.tui import feedback

INTERFACE_VERSION = "mambomeme-tui-1"
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
    p.add_argument("--limit", type=int, default=20, help="results per search (default 20)")
    p.add_argument("--system", default="hybrid", help="system once semantic search is ready")
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


def resolve_build(args: argparse.Namespace, params: dict[str, Any] | None) -> Path:
    if args.build is not None:
        return Path(args.build)
    if params is None:
        raise TuiError("--build: no build directory given and no params file to find one")
    from mambomeme.serving import serving_dir

    return serving_dir(params, None)[0]  # the current release when one is published


def versions(build: Path, params: dict[str, Any] | None, system: str) -> feedback.Versions:
    """Dataset = build name + manifest sha256 prefix; retriever = system + search params hash."""
    manifest = Path("manifests") / f"corpus-{build.name}.json"
    dataset = build.name
    if manifest.is_file():
        dataset += ":" + hashlib.sha256(manifest.read_bytes()).hexdigest()[:12]
    retriever = system
    if params is not None:
        section = {k: params.get(k) for k in ("search", "lexical", "dense")}
        digest = hashlib.sha256(json.dumps(section, sort_keys=True, default=str).encode())
        retriever += ":" + digest.hexdigest()[:12]
    return feedback.Versions(dataset=dataset, retriever=retriever, interface=INTERFACE_VERSION)


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
    import urwid

    from mambomeme.tui.app import ENV_TEST_RAISE, Controller, TuiOptions
    from mambomeme.tui.backend import FakeBackend, LazyEngine

    fake = args.fake_engine or os.environ.get(ENV_FAKE) == "1"
    params = None if fake else _params(args.params)
    build = resolve_build(args, params)
    if fake:
        build.mkdir(parents=True, exist_ok=True)
        fake_params = {
            "dense_delay_s": float(os.environ.get("MAMBOMEME_FAKE_DENSE_DELAY", "0.3")),
            "search_delay_s": float(os.environ.get("MAMBOMEME_FAKE_SEARCH_DELAY", "0")),
        }
        backend: LazyEngine = FakeBackend(build, fake_params)
    else:
        if not build.is_dir():
            raise TuiError(f"--build: {build} is not a built corpus directory (run `dvc repro`)")
        assert params is not None
        backend = LazyEngine(build, params)
    if args.limit < 1:
        raise TuiError(f"--limit: must be at least 1, got {args.limit}")
    enabled = feedback.enabled_from_env() if args.feedback is None else bool(args.feedback)
    log = feedback.FeedbackLog(
        args.feedback_file or feedback.default_path(), versions(build, params, args.system), enabled
    )
    log.prune()
    viewer = args.viewer or os.environ.get(ENV_VIEWER) or "xdg-open"
    timing = args.timing_file or (
        Path(os.environ[ENV_TIMING]) if os.environ.get(ENV_TIMING) else None
    )
    options = TuiOptions(
        build_dir=build.resolve(),
        release=build.name,
        limit=args.limit,
        system=args.system,
        print_choice=args.print_choice,
        viewer=tuple(shlex.split(viewer)),
        timing_file=timing,
        show_preview=not args.no_preview,
        raise_in=os.environ.get(ENV_TEST_RAISE, ""),
    )
    tty_in, tty_out, to_close = _terminal()
    try:
        screen = urwid.display.raw.Screen(input=tty_in, output=tty_out)
        controller = Controller(
            backend.search,
            options,
            log,
            item_lookup=backend.item,
            load_dense=backend.load_dense,
            open_backend=backend.open,
            screen=screen,
        )
        code = controller.run()
    finally:
        for handle in to_close:
            handle.close()
    if controller.chosen_path is not None:
        print(controller.chosen_path)
    return code


def run_bench(args: argparse.Namespace) -> int:
    from mambomeme.tui.harness import BenchConfig, run_benchmark

    fake = args.fake_engine
    params = None if fake else _params(args.params)
    build = resolve_build(args, params)
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
    report = run_benchmark(config)
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
