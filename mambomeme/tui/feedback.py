"""Local interaction events under the privacy contract of the retrieval spec (seed 002).

- Off by default. While off, nothing is created or written; turning it off stops writes at once.
- One local JSON-lines file (default $XDG_STATE_HOME/mambomeme/events.jsonl), mode 0600 (set with
  fchmod on every open, so a pre-existing 0644 file or a umask of 000 cannot widen it), in a
  directory of mode 0700.
- One random session id per launch (secrets.token_hex); no user id, machine id, hostname, home
  path, clipboard or chat content is ever recorded.
- Actions: preview, open, copy, choose, reformulate, abandon. Only `choose` is a selection.
- Events older than `retention_days` (30) are pruned when the log starts; `delete_events` removes
  the file at once. Nothing is uploaded: this module has no network code.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

from mambomeme.corpus.normalise import normalise
from mambomeme.feedback.schema import (
    ACTIONS,
    EVENT_SCHEMA_VERSION,
    ITEM_ACTIONS,
    RETENTION_DAYS,
    FeedbackError,
    Shown,
)

__all__ = [  # the schema's names stay importable from here (the TUI's log)
    "ACTIONS", "EVENT_SCHEMA_VERSION", "ITEM_ACTIONS", "RETENTION_DAYS", "FeedbackError",
    "FeedbackLog", "InteractionEvent", "Shown", "Versions", "default_path", "delete_events",
    "enabled_from_env", "serving_versions", "utc_now",
]  # fmt: skip

INTERFACE_VERSION = "mambomeme-tui-1"
ENV_PATH = "MAMBOMEME_FEEDBACK_FILE"
ENV_ENABLE = "MAMBOMEME_FEEDBACK"

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


def default_path(environ: Mapping[str, str] | None = None) -> Path:
    """$MAMBOMEME_FEEDBACK_FILE, else $XDG_STATE_HOME/mambomeme/events.jsonl (~/.local/state)."""
    env = os.environ if environ is None else environ
    if env.get(ENV_PATH):
        return Path(env[ENV_PATH])
    state = env.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "mambomeme" / "events.jsonl"


def enabled_from_env(environ: Mapping[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    return env.get(ENV_ENABLE, "").strip().lower() in {"1", "on", "true", "yes"}


@dataclass(frozen=True)
class Versions:
    dataset: str
    retriever: str
    interface: str


def serving_versions(build: Path, params: Mapping[str, Any] | None, system: str) -> Versions:
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
    return Versions(dataset=dataset, retriever=retriever, interface=INTERFACE_VERSION)


@dataclass(frozen=True)
class InteractionEvent:
    schema_version: str
    event_id: str
    session_id: str
    time_utc: str
    request_id: str
    query: str
    shown: tuple[Shown, ...]
    action: str
    target_id: str | None
    target_rank: int | None
    dataset_version: str
    retriever_version: str
    interface_version: str
    ms_since_render: float

    def to_json(self) -> str:
        record = asdict(self)
        record["shown"] = [asdict(s) for s in self.shown]
        return json.dumps(record, ensure_ascii=False, sort_keys=True)


class FeedbackLog:
    """Writes interaction events for one launch; a no-op (touching no file) while disabled."""

    def __init__(
        self,
        path: Path,
        versions: Versions,
        enabled: bool = False,
        clock: Clock = utc_now,
        retention_days: int = RETENTION_DAYS,
    ) -> None:
        self.path = path
        self.versions = versions
        self.enabled = enabled
        self.clock = clock
        self.retention = timedelta(days=retention_days)
        self.session_id = secrets.token_hex(16)  # fresh per launch, never persisted elsewhere

    def set_enabled(self, enabled: bool) -> None:
        self.enabled = enabled

    def record(
        self,
        action: str,
        request_id: str,
        cues: Sequence[str],
        shown: Sequence[tuple[str, int]],
        ms_since_render: float,
        target: tuple[str, int] | None = None,
    ) -> InteractionEvent | None:
        """Append one event if enabled; returns it (or None when disabled)."""
        if action not in ACTIONS:
            raise FeedbackError(f"action: unknown interaction action {action!r}")
        if (action in ITEM_ACTIONS) != (target is not None):
            raise FeedbackError(
                f"action {action!r}: target item {'missing' if target is None else 'not allowed'}"
            )
        if not self.enabled:
            return None
        event = InteractionEvent(
            schema_version=EVENT_SCHEMA_VERSION,
            event_id=uuid.uuid4().hex,
            session_id=self.session_id,
            time_utc=self.clock().astimezone(UTC).isoformat(timespec="milliseconds"),
            request_id=request_id,
            query=normalise(" | ".join(cues)),
            shown=tuple(Shown(item_id, rank) for item_id, rank in shown),
            action=action,
            target_id=None if target is None else target[0],
            target_rank=None if target is None else target[1],
            dataset_version=self.versions.dataset,
            retriever_version=self.versions.retriever,
            interface_version=self.versions.interface,
            ms_since_render=round(ms_since_render, 1),
        )
        with _open_private(self.path, append=True) as handle:
            handle.write(event.to_json() + "\n")
        return event

    def prune(self) -> int:
        """Drop events older than the retention period; returns how many were removed.

        Runs at start. It only ever removes lines from an existing file (it never creates one), so
        it also runs while feedback is off: retention applies to what was stored earlier.
        """
        if not self.path.exists():
            return 0
        cutoff = self.clock().astimezone(UTC) - self.retention
        kept: list[str] = []
        removed = 0
        try:
            data = self.path.read_bytes()
        except OSError as exc:
            raise FeedbackError(f"{self.path}: cannot read the events file: {exc}") from exc
        for raw in data.splitlines():
            if not raw.strip():
                continue
            try:  # a line that is not UTF-8 JSON with a time (a corrupt file) is dropped, not fatal
                line = raw.decode("utf-8")
                stamp = datetime.fromisoformat(json.loads(line)["time_utc"])
                if stamp.tzinfo is None:
                    raise ValueError("time_utc without a time zone")
            except (ValueError, KeyError, TypeError, RecursionError):
                removed += 1  # an unreadable line cannot be dated, so it cannot be kept safely
                continue
            if stamp >= cutoff:
                kept.append(line)
            else:
                removed += 1
        if removed:
            tmp = self.path.with_name(self.path.name + ".tmp")
            with _open_private(tmp, append=False) as handle:
                handle.write("".join(line + "\n" for line in kept))
            os.replace(tmp, self.path)
        return removed


def delete_events(path: Path) -> bool:
    """Delete the events file now; True if there was one."""
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


def _make_private_dirs(directory: Path) -> None:
    """Create missing directories with mode 0700 (chmod defeats the umask).

    A directory that already exists is left as it is: the path may be overridden to a shared
    place such as /tmp, whose mode is not ours to change.
    """
    missing: list[Path] = []
    current = directory
    while not current.exists():
        missing.append(current)
        current = current.parent
    for created in reversed(missing):
        created.mkdir(mode=0o700)
        os.chmod(created, 0o700)


def _open_private(path: Path, append: bool) -> TextIO:
    """Open `path` for writing with mode 0600 in a 0700 directory, whatever the umask."""
    _make_private_dirs(path.parent)
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
    try:
        fd = os.open(path, flags | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError as exc:
        raise FeedbackError(f"{path}: cannot open the events file: {exc}") from exc
    os.fchmod(fd, 0o600)  # a file that existed with wider permissions is narrowed
    return os.fdopen(fd, "a" if append else "w", encoding="utf-8")
