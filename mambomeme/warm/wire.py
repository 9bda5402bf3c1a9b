"""What a warm search server and its clients agree on: where the socket is, what identifies the
build and the code being served, and how a request and a response travel (one JSON document
each way over a Unix socket; JSON escapes lone surrogates, so a non-UTF-8 build path survives).

The socket lives in a folder only its owner can enter: $MAMBOMEME_RUNTIME_DIR, else
$XDG_RUNTIME_DIR/mambomeme, else /tmp/mambomeme-<uid>. A folder that another user owns or
that others may enter is refused (MamboMemeError), never used.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import mambomeme
from mambomeme.errors import MamboMemeError
from mambomeme.index.verified import identity
from mambomeme.search.results import Filters, MatchedField, Result, RouteHit, SearchResponse

WIRE_VERSION = "warm-v1"
SOCKET_NAME = "serve.sock"
LOCK_NAME = "serve.lock"
MAX_MESSAGE = 1 << 24  # bytes a request or a response may take


def runtime_dir() -> Path:
    """The private folder of the socket (module docstring), created 0700 when missing."""
    explicit = os.environ.get("MAMBOMEME_RUNTIME_DIR")
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if explicit:
        folder = Path(explicit)
    elif xdg:
        folder = Path(xdg) / "mambomeme"
    else:
        folder = Path("/tmp") / f"mambomeme-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = folder.lstat()
    except OSError as exc:
        raise MamboMemeError(f"warm search: cannot use {folder}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise MamboMemeError(
            f"warm search: {folder} is not a folder only you can enter (owner, mode 0700)"
        )
    return folder


def build_stamp(build: Path) -> str:
    """The content stamp of a build folder: every file's (size, mtime, ctime, inode), the
    identity index/verified.py remembers a content check by. Any write changes it."""
    files = identity(build)
    if not files:
        raise MamboMemeError(f"warm search: {build} has no files")
    return _digest(files)


def code_stamp() -> str:
    """The stamp of the mambomeme source files this process runs: a server started before the
    code changed must not answer for the new code."""
    package = Path(mambomeme.__file__).parent
    files = {
        p.relative_to(package).as_posix(): [p.stat().st_size, p.stat().st_mtime_ns]
        for p in sorted(package.rglob("*.py"))
    }
    return _digest({"version": WIRE_VERSION, "package": str(package), "files": files})


def params_digest(params: dict[str, Any]) -> str:
    return _digest(params)


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Request:
    """One search as the CLI would run it in-process (cli/search.py), for one build."""

    build: str  # the resolved build folder
    build_stamp: str
    cwd: str  # the client's working folder: relative paths in params resolve against it
    code_stamp: str
    params: dict[str, Any]
    system: str
    cues: list[str]
    limit: int
    filters: dict[str, str | None]

    @classmethod
    def from_json(cls, data: Any) -> Request:
        """A request read from a client; MamboMemeError naming the field that is wrong."""
        if not isinstance(data, dict):
            raise MamboMemeError("warm request: expected a JSON object")
        kinds = {"build": str, "build_stamp": str, "cwd": str, "code_stamp": str, "params": dict,
                 "system": str, "cues": list, "limit": int, "filters": dict}  # fmt: skip
        for name, kind in kinds.items():
            if not isinstance(data.get(name), kind) or isinstance(data.get(name), bool):
                raise MamboMemeError(f"warm request: field {name!r} must be {kind.__name__}")
        if not all(isinstance(c, str) for c in data["cues"]):
            raise MamboMemeError("warm request: field 'cues' must be a list of strings")
        filters = data["filters"]
        if set(filters) - {"kind", "language", "template"} or not all(
            v is None or isinstance(v, str) for v in filters.values()
        ):
            raise MamboMemeError("warm request: field 'filters' has unknown keys or values")
        return cls(**{name: data[name] for name in kinds})

    def filter_record(self) -> Filters:
        return Filters(**self.filters)


def encode(value: Any) -> bytes:
    return json.dumps(value).encode("ascii") + b"\n"  # ensure_ascii: surrogates as \udcxx


def decode(data: bytes) -> Any:
    try:
        return json.loads(data.decode("ascii"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise MamboMemeError(f"warm search: not a warm message: {exc}") from None


def response_to_json(response: SearchResponse) -> dict[str, Any]:
    return asdict(response)


def response_from_json(data: dict[str, Any]) -> SearchResponse:
    """The SearchResponse `response_to_json` wrote (JSON keeps floats exact)."""
    results = tuple(
        Result(
            **{k: v for k, v in r.items() if k not in ("hits", "matched_fields")},
            hits=tuple(RouteHit(**h) for h in r["hits"]),
            matched_fields=tuple(MatchedField(**m) for m in r["matched_fields"]),
        )
        for r in data["results"]
    )
    return SearchResponse(
        request_id=data["request_id"],
        system=data["system"],
        cues=tuple(data["cues"]),
        results=results,
        timings_ms=dict(data["timings_ms"]),
        empty_reason=data["empty_reason"],
        added_cues=tuple(data["added_cues"]),
    )


def read_message(sock: Any) -> bytes:
    """Everything the peer sends until it shuts its side (at most MAX_MESSAGE bytes)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = sock.recv(1 << 16)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_MESSAGE:
            raise MamboMemeError(f"warm search: a message over {MAX_MESSAGE} bytes")
        chunks.append(chunk)
