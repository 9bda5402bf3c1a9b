"""The warm search server: one process that keeps engines open (item table, indexes, ONNX
sessions) so that a repeated `mambomeme search` costs the search, not the start-up.

It serves one request at a time on a Unix socket in the private runtime folder (wire.py), holds
at most `max_builds` engines (one per build folder, client working folder and params) and
exits after `idle_seconds` without a request. It never answers for a build or code other than
the client's: a request carries the build's content stamp and the client's code stamp; a build
whose files changed since its engine opened is opened (and verified) again, a stamp that
differs from the server's own reading gets "stale" and the client searches in-process. One
server per runtime folder: it holds `serve.lock` (flock) for its whole life.
"""

from __future__ import annotations

import fcntl
import os
import socket
import socketserver
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mambomeme.errors import MamboMemeError
from mambomeme.warm import wire


@dataclass(frozen=True)
class ServeConfig:
    """params `serve` (defaults declared here once)."""

    enabled: bool = True
    idle_seconds: float = 600.0
    max_builds: int = 2
    connect_timeout_s: float = 0.2
    request_timeout_s: float = 120.0

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> ServeConfig:
        section = params.get("serve") or {}
        if not isinstance(section, dict):
            raise MamboMemeError("params serve: expected a mapping")
        config = cls(
            enabled=bool(section.get("enabled", cls.enabled)),
            idle_seconds=float(section.get("idle_seconds", cls.idle_seconds)),
            max_builds=int(section.get("max_builds", cls.max_builds)),
            connect_timeout_s=float(section.get("connect_timeout_s", cls.connect_timeout_s)),
            request_timeout_s=float(section.get("request_timeout_s", cls.request_timeout_s)),
        )
        if config.idle_seconds <= 0 or config.max_builds < 1:
            raise MamboMemeError("params serve: idle_seconds must be > 0, max_builds >= 1")
        return config


@dataclass
class _Open:
    stamp: str
    engine: Any  # search.engine.Engine (imported lazily: the client never imports it)


class WarmServer(socketserver.UnixStreamServer):
    """Engines by (build, client's working folder, params digest), least recently used dropped
    past `max_builds`."""

    def __init__(self, path: Path, idle_seconds: float, max_builds: int) -> None:
        self.engines: OrderedDict[tuple[str, str, str], _Open] = OrderedDict()
        self.max_builds = max_builds
        self.code_stamp = wire.code_stamp()
        self.finished = False
        self.served = 0
        super().__init__(str(path), _Handler)
        self.timeout = idle_seconds

    def handle_timeout(self) -> None:
        self.finished = True  # idle for `timeout` seconds

    def run(self) -> None:
        while not self.finished:
            self.handle_request()

    def answer(self, data: Any) -> dict[str, Any]:
        """The reply to one decoded message: {"status": "ok", "response": ...}, "stale-code",
        "stale-build", "stopped", "running" (to {"state": true}: searches answered and engines
        held) or "error" with a message."""
        if isinstance(data, dict) and data.get("stop") is True:
            self.finished = True
            return {"status": "stopped", "served": self.served}
        if isinstance(data, dict) and data.get("state") is True:
            return {"status": "running", "served": self.served, "engines": [
                {"build": build, "cwd": cwd, "stamp": opened.stamp}
                for (build, cwd, _), opened in self.engines.items()
            ]}  # fmt: skip
        try:
            request = wire.Request.from_json(data)
            if request.code_stamp != self.code_stamp:
                self.finished = True  # the code changed under us: let a new server start
                return {"status": "stale-code"}
            response = self._search(request)
        except MamboMemeError as exc:
            return {"status": "error", "message": str(exc)}
        except Exception as exc:  # noqa: BLE001 - the client reruns it in-process, which raises
            return {"status": "error", "message": f"untyped {type(exc).__name__}: {exc}"}
        if response is None:
            return {"status": "stale-build"}
        self.served += 1
        return {"status": "ok", "response": wire.response_to_json(response)}

    def _search(self, request: wire.Request) -> Any:
        build = Path(request.build)
        try:
            os.chdir(request.cwd)  # params' relative paths mean what they mean to the client
        except OSError as exc:
            raise MamboMemeError(f"warm request: cannot enter {request.cwd}: {exc}") from None
        stamp = wire.build_stamp(build)
        if stamp != request.build_stamp:
            return None  # the client read another state of the folder than the one here now
        key = (request.build, request.cwd, wire.params_digest(request.params))
        opened = self.engines.get(key)
        if opened is None or opened.stamp != stamp:
            from mambomeme.search.engine import Engine

            self.engines.pop(key, None)
            engine = Engine.open(build, request.params)  # verified before it serves
            if wire.build_stamp(build) != stamp:
                return None  # changed while it opened: nothing remembered
            opened = _Open(stamp, engine)
            self.engines[key] = opened
            while len(self.engines) > self.max_builds:
                self.engines.popitem(last=False)
        self.engines.move_to_end(key)
        filters = request.filter_record()
        opened.engine.items.check_filter_values(filters)
        opened.engine.load(request.system)
        return opened.engine.search(request.cues, request.limit, filters, request.system)


class _Handler(socketserver.BaseRequestHandler):
    server: WarmServer

    def handle(self) -> None:
        sock: socket.socket = self.request
        sock.settimeout(30.0)  # a client that stalls does not hold the server
        try:
            reply = self.server.answer(wire.decode(wire.read_message(sock)))
        except MamboMemeError as exc:
            reply = {"status": "error", "message": str(exc)}
        except OSError:
            return
        try:
            sock.sendall(wire.encode(reply))
        except OSError:
            pass  # the client gave up waiting; it searches in-process


@contextmanager
def _single_server(folder: Path) -> Iterator[bool]:
    """True while this process holds the folder's server lock; False when another has it."""
    fd = os.open(folder / wire.LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def serve(config: ServeConfig) -> int | None:
    """Serve until idle for config.idle_seconds or asked to stop; the number of searches
    answered, or None when another server already runs in this runtime folder."""
    folder = wire.runtime_dir()
    path = folder / wire.SOCKET_NAME
    with _single_server(folder) as mine:
        if not mine:
            return None
        path.unlink(missing_ok=True)  # a socket a dead server left behind
        server = WarmServer(path, config.idle_seconds, config.max_builds)
        try:
            os.chmod(path, 0o600)
            server.run()
        finally:
            server.server_close()
            path.unlink(missing_ok=True)
        return server.served
