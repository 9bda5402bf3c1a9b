"""The client side of warm search: ask the server (server.py) for a search, start one on demand.

`warm_search` returns the server's SearchResponse, or None whenever the warm path cannot answer
for exactly this build and code (off, no server yet, stale, an error, a timeout): the caller then
searches in-process, which also raises the typed error a bad request deserves. So the warm path
changes how fast an answer comes, never which answer. MAMBOMEME_WARM=0 turns it off (as does
params serve.enabled: false).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from mambomeme.errors import MamboMemeError
from mambomeme.search.results import Filters, SearchResponse
from mambomeme.warm import wire
from mambomeme.warm.server import ServeConfig


def enabled(config: ServeConfig) -> bool:
    return config.enabled and os.environ.get("MAMBOMEME_WARM", "1") != "0"


def warm_search(
    build: Path,
    params: dict[str, Any],
    system: str,
    cues: list[str],
    limit: int,
    filters: Filters,
    start: bool = True,
) -> SearchResponse | None:
    """The response of the warm server for this request, or None (module docstring). With
    `start`, a missing server is started in the background for the next call."""
    try:
        config = ServeConfig.from_params(params)
        if not enabled(config):
            return None
        folder = wire.runtime_dir()
        if json.loads(json.dumps(params)) != params:
            return None  # params JSON cannot carry unchanged (tuples, non-string keys)
        resolved = Path(build).resolve()
        request = wire.Request(
            build=str(resolved),
            build_stamp=wire.build_stamp(resolved),
            cwd=os.getcwd(),
            code_stamp=wire.code_stamp(),
            params=params,
            system=system,
            cues=list(cues),
            limit=limit,
            filters={
                "kind": filters.kind,
                "language": filters.language,
                "template": filters.template,
            },
        )
    except (MamboMemeError, OSError, TypeError, ValueError):
        return None
    reply = exchange(folder, vars(request), config)
    if reply is None:
        if start:
            start_server(config)
        return None
    if reply.get("status") != "ok":
        return None
    try:
        return wire.response_from_json(reply["response"])
    except (KeyError, TypeError, ValueError):
        return None


def exchange(folder: Path, message: dict[str, Any], config: ServeConfig) -> dict[str, Any] | None:
    """One message to the server and its reply; None when no server answers."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(config.connect_timeout_s)
            sock.connect(str(folder / wire.SOCKET_NAME))
            sock.settimeout(config.request_timeout_s)
            sock.sendall(wire.encode(message))
            sock.shutdown(socket.SHUT_WR)
            reply = wire.decode(wire.read_message(sock))
    except (OSError, MamboMemeError):
        return None
    return reply if isinstance(reply, dict) else None


def start_server(config: ServeConfig) -> None:
    """`mambomeme serve` in the background, detached from this terminal and session; a second
    one started at the same time finds the lock taken and exits."""
    command = [sys.executable, "-m", "mambomeme.cli", "serve", "--idle",
               f"{config.idle_seconds:g}", "--max-builds", str(config.max_builds)]  # fmt: skip
    try:
        subprocess.Popen(  # our own interpreter and module
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
    except OSError:
        pass  # no warm path this time; the search itself runs in-process


def stop_server() -> int | None:
    """Ask the running server to exit: the searches it answered, or None when none runs."""
    reply = exchange(wire.runtime_dir(), {"stop": True}, ServeConfig())
    if reply is None or reply.get("status") != "stopped":
        return None
    return int(reply.get("served", 0))
