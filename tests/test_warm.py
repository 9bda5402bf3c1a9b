"""The warm search path (mambomeme/warm): a server holding the engine answers exactly what an
in-process search answers, for the client's build and code only, and the CLI falls back to
searching itself whenever the server cannot answer. The server runs as users get it: its own
`mambomeme serve` process, on a socket in the test's private runtime folder."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mambomeme import cli
from mambomeme.errors import MamboMemeError
from mambomeme.search.results import Filters
from mambomeme.warm import wire
from mambomeme.warm.client import exchange, warm_search
from mambomeme.warm.server import ServeConfig

ROOT = Path(__file__).resolve().parents[1]
PARAMS = str(ROOT / "params.yaml")


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "run"
    monkeypatch.setenv("MAMBOMEME_RUNTIME_DIR", str(folder))
    monkeypatch.setenv("MAMBOMEME_WARM", "1")
    return folder


def _wait(condition: Any, seconds: float = 60) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


@pytest.fixture
def server(runtime: Path) -> Iterator[subprocess.Popen[bytes]]:
    """`mambomeme serve` in its own process; stopped (or killed) at the end."""
    command = [sys.executable, "-m", "mambomeme.cli", "serve", "--idle", "300"]
    process = subprocess.Popen(command, cwd=ROOT, env=dict(os.environ))
    try:
        assert _wait(lambda: (runtime / wire.SOCKET_NAME).exists() or process.poll() is not None)
        assert process.poll() is None, "the server did not start"
        yield process
    finally:
        if process.poll() is None:
            exchange(runtime, {"stop": True}, ServeConfig())
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _state(runtime: Path) -> dict[str, Any]:
    reply = exchange(runtime, {"state": True}, ServeConfig())
    assert reply is not None and reply["status"] == "running"
    return reply


def _json_search(fixture_build: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> Any:
    argv = ["search", "john cena|cat", "--build", str(fixture_build), "--params", PARAMS]
    assert cli.main([*argv, "--json", *extra]) == 0
    data = json.loads(capsys.readouterr().out)
    del data["request_id"], data["timings_ms"]  # per request: a fresh id, the clock
    return data


def test_warm_json_output_is_the_cold_output(
    fixture_build: Path,
    server: subprocess.Popen[bytes],
    runtime: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cases = [(), ("--system", "bm25", "--kind", "template"), ("--system", "hybrid", "--cue", "x")]
    for number, extra in enumerate(cases, start=1):
        monkeypatch.setenv("MAMBOMEME_WARM", "0")
        cold = _json_search(fixture_build, capsys, *extra)
        assert _state(runtime)["served"] == number - 1
        monkeypatch.setenv("MAMBOMEME_WARM", "1")
        warm = _json_search(fixture_build, capsys, *extra)
        assert _state(runtime)["served"] == number  # the server answered, not a fallback
        assert warm == cold
        assert cold["results"]  # a real list, not two empty ones


def _request(build: Path, params: dict[str, Any], **changes: Any) -> dict[str, Any]:
    request = wire.Request(
        build=str(build.resolve()),
        build_stamp=wire.build_stamp(build),
        cwd=os.getcwd(),
        code_stamp=wire.code_stamp(),
        params=params,
        system="bm25",
        cues=["john cena"],
        limit=5,
        filters={"kind": None, "language": None, "template": None},
    )
    return {**vars(request), **changes}


def _ask(runtime: Path, request: dict[str, Any]) -> dict[str, Any]:
    reply = exchange(runtime, request, ServeConfig())
    assert reply is not None
    return reply


def test_a_changed_build_is_reopened_and_a_stale_stamp_refused(
    fixture_build: Path,
    params: dict[str, Any],
    server: subprocess.Popen[bytes],
    runtime: Path,
    tmp_path: Path,
) -> None:
    build = tmp_path / "build"
    shutil.copytree(fixture_build, build)
    first = _ask(runtime, _request(build, params))
    assert first["status"] == "ok"
    (opened,) = _state(runtime)["engines"]
    stale = _request(build, params)
    (build / "lexical.json").touch()  # any write changes the stamp (ctime)
    assert _ask(runtime, stale) == {"status": "stale-build"}
    again = _ask(runtime, _request(build, params))
    assert again["status"] == "ok"
    (reopened,) = _state(runtime)["engines"]
    assert reopened["stamp"] != opened["stamp"]  # opened (and verified) again
    assert reopened["stamp"] == wire.build_stamp(build)
    assert again["response"]["results"] == first["response"]["results"]


def test_a_corrupt_build_is_never_served_warm(
    fixture_build: Path,
    params: dict[str, Any],
    server: subprocess.Popen[bytes],
    runtime: Path,
    tmp_path: Path,
) -> None:
    build = tmp_path / "build"
    shutil.copytree(fixture_build, build)
    assert _ask(runtime, _request(build, params))["status"] == "ok"
    data = bytearray((build / "items.parquet").read_bytes())
    data[len(data) // 2] ^= 0x01
    (build / "items.parquet").write_bytes(bytes(data))
    reply = _ask(runtime, _request(build, params))
    assert reply["status"] == "error" and "items.parquet" in reply["message"]
    assert warm_search(build, params, "bm25", ["john cena"], 5, Filters(), start=False) is None


def test_another_code_or_a_bad_request_is_refused(
    fixture_build: Path,
    params: dict[str, Any],
    server: subprocess.Popen[bytes],
    runtime: Path,
) -> None:
    bad = _ask(runtime, _request(fixture_build, params, limit="5"))
    assert bad == {"status": "error", "message": "warm request: field 'limit' must be int"}
    other = _ask(runtime, _request(fixture_build, params, code_stamp="0" * 64))
    assert other == {"status": "stale-code"}
    assert server.wait(timeout=30) == 0  # a server of older code goes away
    assert not (runtime / wire.SOCKET_NAME).exists()


def test_the_clients_working_folder_is_where_the_engine_opens(
    fixture_build: Path,
    params: dict[str, Any],
    server: subprocess.Popen[bytes],
    runtime: Path,
    tmp_path: Path,
) -> None:
    gone = _ask(runtime, _request(fixture_build, params, cwd=str(tmp_path / "gone")))
    assert gone["status"] == "error" and "cannot enter" in gone["message"]
    assert _ask(runtime, _request(fixture_build, params))["status"] == "ok"
    assert _ask(runtime, _request(fixture_build, params, cwd=str(tmp_path)))["status"] == "ok"
    engines = _state(runtime)["engines"]
    assert {e["cwd"] for e in engines} == {os.getcwd(), str(tmp_path)}  # one each


def test_a_runtime_folder_others_may_enter_is_refused(
    runtime: Path, fixture_build: Path, params: dict[str, Any]
) -> None:
    runtime.mkdir(mode=0o755)
    os.chmod(runtime, 0o755)
    with pytest.raises(MamboMemeError, match="only you can enter"):
        wire.runtime_dir()
    assert warm_search(fixture_build, params, "bm25", ["john cena"], 5, Filters()) is None
    assert not (runtime / wire.SOCKET_NAME).exists()  # no server started there either


def test_search_starts_a_server_on_demand_and_serve_stops_it(
    fixture_build: Path, runtime: Path
) -> None:
    env = {**os.environ, "MAMBOMEME_WARM": "1", "MAMBOMEME_RUNTIME_DIR": str(runtime)}
    search = [sys.executable, "-m", "mambomeme.cli", "search", "john cena", "--build",
              str(fixture_build), "--params", PARAMS, "--system", "bm25", "--json"]  # fmt: skip
    first = subprocess.run(search, env=env, cwd=ROOT, capture_output=True, check=False)
    assert first.returncode == 0, first.stderr
    try:
        assert _wait(lambda: (runtime / wire.SOCKET_NAME).exists())
        second = subprocess.run(search, env=env, cwd=ROOT, capture_output=True, check=False)
        assert second.returncode == 0, second.stderr
        assert json.loads(second.stdout)["results"] == json.loads(first.stdout)["results"]
    finally:
        stop = [sys.executable, "-m", "mambomeme.cli", "serve", "--stop"]
        stopped = subprocess.run(stop, env=env, cwd=ROOT, capture_output=True, text=True)
    assert stopped.returncode == 0, stopped.stderr
    assert "stopped after 1 search(es)" in stopped.stderr  # the second search was served warm
    assert _wait(lambda: not (runtime / wire.SOCKET_NAME).exists(), 10)
