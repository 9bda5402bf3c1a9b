"""The interaction-feedback privacy contract (retrieval spec, 'Interaction feedback')."""

from __future__ import annotations

import json
import os
import socket
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mambomeme.cli import main
from mambomeme.tui import feedback
from mambomeme.tui.feedback import FeedbackError, FeedbackLog, Versions

VERSIONS = Versions(dataset="fixture:abc", retriever="hybrid:def", interface="mambomeme-tui-1")
SHOWN = [("id-1", 1), ("id-2", 2)]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def log(path: Path, enabled: bool = True, **kw) -> FeedbackLog:  # type: ignore[no-untyped-def]
    return FeedbackLog(path, VERSIONS, enabled=enabled, **kw)


def test_default_is_off_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "state" / "mambomeme" / "events.jsonl"
    off = FeedbackLog(path, VERSIONS)
    assert off.enabled is False
    assert off.record("choose", "r1", ["john cena"], SHOWN, 10.0, ("id-1", 1)) is None
    assert off.prune() == 0
    assert list(tmp_path.iterdir()) == []


def test_env_and_default_path() -> None:
    env = {"XDG_STATE_HOME": "/x/state"}
    assert feedback.default_path(env) == Path("/x/state/mambomeme/events.jsonl")
    assert feedback.default_path({**env, feedback.ENV_PATH: "/y/e.jsonl"}) == Path("/y/e.jsonl")
    assert feedback.enabled_from_env({}) is False
    assert feedback.enabled_from_env({feedback.ENV_ENABLE: "1"}) is True


def test_opted_in_modes_are_0600_and_0700(tmp_path: Path) -> None:
    path = tmp_path / "state" / "mambomeme" / "events.jsonl"
    log(path).record("open", "r1", ["q"], SHOWN, 5.0, ("id-2", 2))
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700
    assert mode(path.parent.parent) == 0o700  # every directory it had to create


def test_modes_hold_with_umask_000(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        path = tmp_path / "m" / "events.jsonl"
        log(path).record("copy", "r1", ["q"], SHOWN, 5.0, ("id-1", 1))
    finally:
        os.umask(old)
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700


def test_pre_existing_0644_file_is_narrowed(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text("")
    path.chmod(0o644)
    old = os.umask(0)
    try:
        log(path).record("preview", "r1", ["q"], SHOWN, 5.0, ("id-1", 1))
    finally:
        os.umask(old)
    assert mode(path) == 0o600


def test_event_fields_and_no_identity(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    event = log(path).record(
        "choose", "req-9", ["  John   Cena ", "wrestler"], SHOWN, 1234.56, ("id-2", 2)
    )
    assert event is not None
    record = json.loads(path.read_text())
    assert record == {
        "schema_version": "interaction-v1",
        "event_id": event.event_id,
        "session_id": event.session_id,
        "time_utc": event.time_utc,
        "request_id": "req-9",
        "query": "John Cena | wrestler",
        "shown": [{"id": "id-1", "rank": 1}, {"id": "id-2", "rank": 2}],
        "action": "choose",
        "target_id": "id-2",
        "target_rank": 2,
        "dataset_version": "fixture:abc",
        "retriever_version": "hybrid:def",
        "interface_version": "mambomeme-tui-1",
        "ms_since_render": 1234.6,
    }
    assert datetime.fromisoformat(record["time_utc"]).utcoffset() == timedelta(0)
    text = path.read_text()
    assert socket.gethostname() not in text
    assert str(Path.home()) not in text
    assert os.environ.get("USER", "\x00") not in text


def test_actions_are_checked_and_only_item_actions_have_targets(tmp_path: Path) -> None:
    events = log(tmp_path / "e.jsonl")
    with pytest.raises(FeedbackError, match="unknown interaction action"):
        events.record("select", "r", ["q"], SHOWN, 1.0, ("id-1", 1))
    with pytest.raises(FeedbackError, match="target item missing"):
        events.record("choose", "r", ["q"], SHOWN, 1.0)
    with pytest.raises(FeedbackError, match="not allowed"):
        events.record("abandon", "r", ["q"], SHOWN, 1.0, ("id-1", 1))
    reformulate = events.record("reformulate", "r", ["q"], SHOWN, 1.0)
    assert reformulate is not None and reformulate.target_id is None


def test_turning_off_stops_writes_immediately(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    events = log(path)
    events.record("open", "r", ["q"], SHOWN, 1.0, ("id-1", 1))
    events.set_enabled(False)
    events.record("open", "r", ["q"], SHOWN, 1.0, ("id-1", 1))
    assert len(path.read_text().splitlines()) == 1


def test_two_launches_have_different_random_session_ids(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    first, second = log(path), log(path)
    first.record("abandon", "r1", ["q"], SHOWN, 1.0)
    second.record("abandon", "r2", ["q"], SHOWN, 1.0)
    ids = [json.loads(line)["session_id"] for line in path.read_text().splitlines()]
    assert len(ids) == 2 and ids[0] != ids[1]
    assert all(len(i) == 32 for i in ids)


def test_old_events_are_pruned_with_an_injected_clock(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    start = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    now = [start]
    events = log(path, clock=lambda: now[0])
    events.record("open", "old", ["q"], SHOWN, 1.0, ("id-1", 1))
    now[0] = start + timedelta(days=20)
    events.record("open", "new", ["q"], SHOWN, 1.0, ("id-1", 1))
    now[0] = start + timedelta(days=30, seconds=1)  # 'old' is now past 30 days, 'new' is not
    later = log(path, clock=lambda: now[0])
    assert later.prune() == 1
    assert [json.loads(x)["request_id"] for x in path.read_text().splitlines()] == ["new"]
    assert mode(path) == 0o600
    now[0] = start + timedelta(days=60)
    assert log(path, enabled=False, clock=lambda: now[0]).prune() == 1
    assert path.read_text() == ""


def test_feedback_delete_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "e.jsonl"
    log(path).record("open", "r", ["q"], SHOWN, 1.0, ("id-1", 1))
    assert main(["feedback", "delete", "--feedback-file", str(path)]) == 0
    assert not path.exists()
    assert "deleted" in capsys.readouterr().out
    assert main(["feedback", "delete", "--feedback-file", str(path)]) == 0
    assert "no events file" in capsys.readouterr().out


def test_module_has_no_network_code() -> None:
    source = Path(feedback.__file__).read_text()
    for word in ("socket", "urllib", "http", "requests"):
        assert f"import {word}" not in source
