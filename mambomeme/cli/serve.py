"""`mambomeme serve`: the warm search server (mambomeme/warm) in the foreground, or --stop.

`mambomeme search` starts one in the background on demand (params serve); this command runs
one by hand (to watch it, or with other limits) and stops a running one."""

from __future__ import annotations

import argparse
import dataclasses
import signal
import sys
from pathlib import Path
from typing import Any

from mambomeme.config import DEFAULT_PARAMS, load_params


def register(sub: Any) -> None:
    p = sub.add_parser("serve", help="keep search engines open for repeated searches")
    p.add_argument("--idle", type=float, help="exit after this many seconds without a search")
    p.add_argument("--max-builds", type=int, help="engines kept open at once (one per build)")
    p.add_argument("--params", type=Path, default=DEFAULT_PARAMS)
    p.add_argument("--stop", action="store_true", help="stop the running server and exit")
    p.set_defaults(handler=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    from mambomeme.warm import ServeConfig, serve, stop_server

    if args.stop:
        served = stop_server()
        if served is None:
            print("mambomeme: no warm search server is running", file=sys.stderr)
            return 1
        print(f"mambomeme: warm search server stopped after {served} search(es)", file=sys.stderr)
        return 0
    params = load_params(args.params) if args.params.exists() else {}
    config = ServeConfig.from_params(params)
    changes = {"idle_seconds": args.idle, "max_builds": args.max_builds}
    config = dataclasses.replace(config, **{k: v for k, v in changes.items() if v is not None})
    config = ServeConfig.from_params({"serve": dataclasses.asdict(config)})  # bounds checked
    signal.signal(signal.SIGTERM, _stop)  # `kill PID`: the socket is removed on the way out
    try:
        served = serve(config)
    except KeyboardInterrupt:
        return 0
    if served is None:
        print("mambomeme: a warm search server is already running", file=sys.stderr)
    return 0


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
