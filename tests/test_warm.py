"""The warm search path (mambomeme/warm): a server holding the engine answers exactly what an
in-process search answers, for the client's build and code only, and the CLI falls back to
searching itself whenever the server cannot answer."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
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
from mambomeme.warm.server import ServeConfig, WarmServer

ROOT = Path(__file__).resolve().parents[1]
PARAMS = str(ROOT / "params.yaml")


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "run"
    monkeypatch.setenv("MAMBOMEME_RUNTIME_DIR", str(folder))
    monkeypatch.setenv("MAMBOMEME_WARM", "1")
    return folder


@pytest.fixture
def server(runtime: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[WarmServer]:
    """A warm server in a thread of this process, on the test's private socket (it enters each
    client's working folder: this process's, given back at the end)."""
    monkeypatch.chdir(os.getcwd())
    folder = wire.runtime_dir()
    warm = WarmServer(folder / wire.SOCKET_NAME, idle_seconds=600, max_builds=2)
    thread = threading.Thread(target=warm.run, daemon=True)
    thread.start()
    yield warm
    if not warm.finished:
        assert exchange(folder, {"stop": True}, ServeConfig()) is not None
    thread.join(timeout=10)
    warm.server_close()


def _json_search(fixture_build: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> Any:
    argv = ["search", "john cena|cat", "--build", str(fixture_build), "--params", PARAMS]
    assert cli.main([*argv, "--json", *extra]) == 0
    data = json.loads(capsys.readouterr().out)
    del data["request_id"], data["timings_ms"]  # per request: a fresh id, the clock
    return data


def test_warm_json_output_is_the_cold_output(
    fixture_build: Path,
    server: WarmServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MAMBOMEME_WARM", "0")
    cold = _json_search(fixture_build, capsys)
    assert server.served == 0
    monkeypatch.setenv("MAMBOMEME_WARM", "1")
    warm = _json_search(fixture_build, capsys)
    assert server.served == 1  # the server answered, not an in-process fallback
    assert warm == cold
    assert cold["results"]  # a real list, not two empty ones
    for system in ("bm25", "hybrid"):
        assert _json_search(fixture_build, capsys, "--system", system, "--kind", "template") == (
            monkeypatch.setenv("MAMBOMEME_WARM", "0")
            or _json_search(fixture_build, capsys, "--system", system, "--kind", "template")
        )
        monkeypatch.setenv("MAMBOMEME_WARM", "1")
    assert server.served == 3


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


def test_a_changed_build_is_reopened_and_a_stale_stamp_refused(
    fixture_build: Path, params: dict[str, Any], server: WarmServer, tmp_path: Path
) -> None:
    build = tmp_path / "build"
    shutil.copytree(fixture_build, build)
    folder = wire.runtime_dir()
    config = ServeConfig()
    first = exchange(folder, _request(build, params), config)
    assert first is not None and first["status"] == "ok"
    (opened,) = server.engines.values()
    stale = _request(build, params)
    (build / "lexical.json").touch()  # any write changes the stamp (ctime)
    assert exchange(folder, stale, config) == {"status": "stale-build"}
    again = exchange(folder, _request(build, params), config)
    assert again is not None and again["status"] == "ok"
    (reopened,) = server.engines.values()
    assert reopened.engine is not opened.engine  # opened (and verified) again
    assert again["response"]["results"] == first["response"]["results"]


def test_a_corrupt_build_is_never_served_warm(
    fixture_build: Path, params: dict[str, Any], server: WarmServer, tmp_path: Path
) -> None:
    build = tmp_path / "build"
    shutil.copytree(fixture_build, build)
    folder = wire.runtime_dir()
    assert exchange(folder, _request(build, params), ServeConfig())["status"] == "ok"  # type: ignore[index]
    data = bytearray((build / "items.parquet").read_bytes())
    data[len(data) // 2] ^= 0x01
    (build / "items.parquet").write_bytes(bytes(data))
    reply = exchange(folder, _request(build, params), ServeConfig())
    assert reply is not None and reply["status"] == "error"
    assert warm_search(build, params, "bm25", ["john cena"], 5, Filters(), start=False) is None


def test_another_code_or_a_bad_request_is_refused(
    fixture_build: Path, params: dict[str, Any], server: WarmServer
) -> None:
    folder = wire.runtime_dir()
    bad = exchange(folder, _request(fixture_build, params, limit="5"), ServeConfig())
    assert bad == {"status": "error", "message": "warm request: field 'limit' must be int"}
    other = exchange(folder, _request(fixture_build, params, code_stamp="0" * 64), ServeConfig())
    assert other == {"status": "stale-code"}
    assert server.finished  # a server of older code goes away


def test_the_clients_working_folder_is_where_the_engine_opens(
    fixture_build: Path, params: dict[str, Any], server: WarmServer, tmp_path: Path
) -> None:
    folder = wire.runtime_dir()
    start = os.getcwd()  # the server's chdir is this process's too
    gone = exchange(folder, _request(fixture_build, params, cwd=str(tmp_path / "gone")),
                    ServeConfig())  # fmt: skip
    assert gone is not None and gone["status"] == "error" and "cannot enter" in gone["message"]
    here = exchange(folder, _request(fixture_build, params, cwd=start), ServeConfig())
    there = exchange(folder, _request(fixture_build, params, cwd=str(tmp_path)), ServeConfig())
    assert here is not None and there is not None
    assert here["status"] == there["status"] == "ok"
    assert {key[1] for key in server.engines} == {start, str(tmp_path)}  # one each


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
        deadline = time.monotonic() + 60
        while not (runtime / wire.SOCKET_NAME).exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        second = subprocess.run(search, env=env, cwd=ROOT, capture_output=True, check=False)
        assert second.returncode == 0, second.stderr
        assert json.loads(second.stdout)["results"] == json.loads(first.stdout)["results"]
    finally:
        stop = [sys.executable, "-m", "mambomeme.cli", "serve", "--stop"]
        stopped = subprocess.run(stop, env=env, cwd=ROOT, capture_output=True, text=True)
    assert stopped.returncode == 0, stopped.stderr
    assert "stopped after 1 search(es)" in stopped.stderr  # the second search was served warm
    deadline = time.monotonic() + 10
    while (runtime / wire.SOCKET_NAME).exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not (runtime / wire.SOCKET_NAME).exists()
