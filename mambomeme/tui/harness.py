"""Submit-to-render latency of the real TUI in an 80x24 pseudo-terminal (pexpect + pyte).

Protocol (evaluation spec, seed 000, "Performance metrics"): one warm process, concurrency 1,
result limit 10, TERM=xterm-256color at 80x24, 100 warm-ups, then at least 1,000 measured
searches: every dev query repeated equally in seeded shuffled blocks (the measured count is
rounded up to whole blocks). The TUI has no result cache, so every submit runs the engine.

Each search: focus the query line, clear it, type the query, wait until pyte shows it, then send
Enter. Two clocks:
  inside  - the TUI's own figure (--timing-file): from accepting Enter to the end of the
            draw_screen call that drew the status and the complete list (the scored figure);
  outside - from writing Enter to the PTY until pyte's screen shows the status line with this
            request's sequence number (a cross-check that includes PTY transport).
engine_only is the engine's own `timings_ms["total"]` for the same requests (diagnostic).
A search with no status within `timeout_s`, or whose timing record carries an error, is an error;
a timeout is charged at `timeout_s`. Percentiles are numpy's linear interpolation.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import random
import re
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mambomeme.errors import MamboMemeError

COLS, ROWS = 80, 24
TERM = "xterm-256color"
LIMIT = 10
_SEQ = re.compile(r"^#(\d+)\s")


class BenchError(MamboMemeError):
    """The latency benchmark could not run (queries file, TUI start, ...)."""


@dataclass(frozen=True)
class BenchConfig:
    build: Path
    params: Path
    queries: Path
    warmups: int = 100
    measured: int = 1000
    timeout_s: float = 10.0
    seed: int = 0
    fake_engine: bool = False
    startup_timeout_s: float = 180.0


def load_queries(path: Path) -> list[str]:
    """The `text` field of every line of a benchmark queries.jsonl."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise BenchError(f"--queries: cannot read {path}: {exc.strerror}") from None
    texts: list[str] = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BenchError(f"{path}:{n}: not JSON ({exc.msg})") from None
        text = record.get("text") if isinstance(record, dict) else None
        if not isinstance(text, str) or not text.strip():
            raise BenchError(f"{path}:{n}:text: missing or empty")
        texts.append(" ".join(text.split()))
    if not texts:
        raise BenchError(f"--queries: {path} has no queries")
    return texts


def schedule(texts: Sequence[str], count: int, rng: random.Random) -> list[str]:
    """Whole shuffled blocks of all queries, at least `count` searches in all."""
    blocks = max(1, math.ceil(count / len(texts)))
    order: list[str] = []
    for _ in range(blocks):
        block = list(texts)
        rng.shuffle(block)
        order.extend(block)
    return order


def percentiles(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"p50_ms": math.nan, "p95_ms": math.nan, "p99_ms": math.nan, "mean_ms": math.nan}
    arr = np.asarray(values, dtype=float)
    p50, p95, p99 = np.percentile(arr, [50, 95, 99])
    return {
        "p50_ms": float(p50),
        "p95_ms": float(p95),
        "p99_ms": float(p99),
        "mean_ms": float(arr.mean()),
        "max_ms": float(arr.max()),
    }


class PtySession:
    """A program in an 80x24 PTY whose output is kept raw and fed to a pyte screen."""

    def __init__(
        self,
        argv: Sequence[str],
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        cols: int = COLS,
        rows: int = ROWS,
    ) -> None:
        import pexpect
        import pyte

        self.screen = pyte.Screen(cols, rows)
        self.stream = pyte.ByteStream(self.screen)
        self.raw = bytearray()
        full_env = dict(os.environ if env is None else env)
        full_env["TERM"] = TERM
        full_env.setdefault("LANG", "C.UTF-8")
        self.child = pexpect.spawn(
            argv[0], list(argv[1:]), env=full_env, cwd=cwd, dimensions=(rows, cols)
        )
        self.child.delaybeforesend = None  # pexpect sleeps 50 ms before each send by default

    def pump(self, timeout: float = 0.02) -> bool:
        """Read what is there (waiting up to `timeout`); False once the program has exited."""
        import pexpect

        try:
            data = self.child.read_nonblocking(65536, timeout=timeout)
        except pexpect.TIMEOUT:
            return True
        except pexpect.EOF:
            return False
        self.raw.extend(data)
        self.stream.feed(data)
        return True

    def wait_for(self, predicate: Callable[[], bool], timeout: float) -> bool:
        deadline = time.perf_counter() + timeout
        while not predicate():
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                return False
            if not self.pump(min(0.02, remaining)):
                return predicate()
        return True

    def line(self, row: int) -> str:
        return str(self.screen.display[row])

    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen.display)

    def send(self, data: str) -> None:
        self.child.send(data)

    def close(self) -> int | None:
        deadline = time.perf_counter() + 5
        while self.child.isalive() and time.perf_counter() < deadline:
            self.pump(0.05)
        while self.pump(0.01):
            if not self.child.isalive():
                break
        self.child.close(force=True)
        status = self.child.exitstatus
        return None if status is None else int(status)


def tui_argv(config: BenchConfig, timing_file: Path) -> list[str]:
    argv = [
        sys.executable,
        "-m",
        "mambomeme.cli",
        "tui",
        "--build",
        str(config.build),
        "--params",
        str(config.params),
        "--limit",
        str(LIMIT),
        "--no-feedback",
        "--timing-file",
        str(timing_file),
    ]
    if config.fake_engine:
        argv.append("--fake-engine")
    return argv


def _status(session: PtySession) -> str:
    return session.line(ROWS - 1).strip()


def _read_timing(path: Path, seq: int) -> dict[str, Any] | None:
    if not path.exists():
        return None
    for line in reversed(path.read_text(encoding="utf-8").splitlines()):
        record = json.loads(line)
        if record["seq"] == seq:
            return dict(record)
    return None


def run_benchmark(config: BenchConfig, progress: Callable[[str], None]) -> dict[str, Any]:
    """The latency report of `config`; `progress` gets a line every 100 measured searches."""
    texts = load_queries(config.queries)
    rng = random.Random(config.seed)
    warm = schedule(texts, config.warmups, rng)[: config.warmups]
    measured = schedule(texts, config.measured, rng)
    load_start = os.getloadavg()[0]  # recorded: a busy machine inflates every figure
    with tempfile.TemporaryDirectory(prefix="mambomeme-bench-") as tmp:
        timing = Path(tmp) / "timing.jsonl"
        env = dict(os.environ, HF_HUB_OFFLINE="1", MAMBOMEME_FEEDBACK="0")
        t_spawn = time.perf_counter()
        session = PtySession(tui_argv(config, timing), env=env)
        try:
            if not session.wait_for(lambda: _status(session).startswith("#0"), 30):
                raise BenchError(f"the TUI did not draw its status line:\n{session.text()}")
            startup_ms = (time.perf_counter() - t_spawn) * 1000.0
            ready = session.wait_for(
                lambda: re.search(r"sem:(ready|off|failed)", _status(session)) is not None,
                config.startup_timeout_s,
            )
            semantic = re.search(r"sem:(\S+)", _status(session))
            state = semantic.group(1) if semantic else "unknown"
            if not ready:
                raise BenchError(f"semantic search not ready after {config.startup_timeout_s} s")
            seq = 0
            for text in warm:
                seq += 1
                _one_search(session, timing, text, seq, config.timeout_s, [])
            inside: list[float] = []
            engine: list[float] = []
            outside: list[float] = []
            errors = timeouts = 0
            for n_done, text in enumerate(measured):
                if n_done and n_done % 100 == 0:
                    progress(f"{n_done}/{len(measured)} measured")
                seq += 1
                ok, t_in, t_out, timed_out = _one_search(
                    session, timing, text, seq, config.timeout_s, engine
                )
                inside.append(t_in)
                outside.append(t_out)
                errors += 0 if ok else 1
                timeouts += 1 if timed_out else 0
            session.send("\x03")
            session.close()
        finally:
            if session.child.isalive():
                session.child.terminate(force=True)
    n = len(measured)
    return {
        "protocol": "seed-000 performance: warm process, concurrency 1, limit 10, PTY 80x24",
        "pty": f"{COLS}x{ROWS} TERM={TERM} (pexpect + pyte)",
        "corpus": config.build.name,
        "build": str(config.build),
        "engine": "fake (tests only)" if config.fake_engine else "mambomeme.search.engine",
        "queries_file": str(config.queries),
        "queries_sha256": hashlib.sha256(config.queries.read_bytes()).hexdigest(),
        "distinct_queries": len(texts),
        "seed": config.seed,
        "warmups": len(warm),
        "measured": n,
        "blocks": n // len(texts),
        "limit": LIMIT,
        "timeout_s": config.timeout_s,
        "result_cache": "none: the TUI caches no results; every submit runs the engine",
        "semantic": state,
        "startup_to_first_draw_ms": startup_ms,
        "inside": percentiles(inside),
        "outside": percentiles(outside),
        "engine_only": percentiles(engine),
        "errors": errors,
        "timeouts": timeouts,
        "error_rate": errors / n if n else math.nan,
        "load_average_start_end": [load_start, os.getloadavg()[0]],
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def _shows_query(session: PtySession, text: str) -> bool:
    """The query line (possibly wrapped over several rows) shows exactly `text`."""
    head = " ".join(" ".join(session.line(r).rstrip() for r in range(4)).split())
    return head.startswith("query> " + " ".join(text.split()) + " ") or head == (
        "query> " + " ".join(text.split())
    )


def _one_search(
    session: PtySession,
    timing: Path,
    text: str,
    seq: int,
    timeout_s: float,
    engine_ms: list[float],
) -> tuple[bool, float, float, bool]:
    """(ok, inside ms, outside ms, timed out) for one submit of `text` as request `seq`."""
    if seq > 1:
        session.send("/")  # to the query line from the list (typed and then cleared otherwise)
    session.send("\x15" + text)  # ctrl-u clears the line first
    typed = session.wait_for(lambda: _shows_query(session, text), timeout_s)
    if not typed:
        return (False, timeout_s * 1000, timeout_s * 1000, True)
    t0, t0_epoch = time.perf_counter(), time.time()
    session.send("\r")

    def drawn() -> bool:
        match = _SEQ.match(_status(session))
        return bool(match and int(match.group(1)) == seq and "searching" not in _status(session))

    if not session.wait_for(drawn, timeout_s):
        return (False, timeout_s * 1000, timeout_s * 1000, True)
    t_out = (time.perf_counter() - t0) * 1000.0
    seen_epoch = time.time()
    record = None
    deadline = time.perf_counter() + timeout_s
    while record is None and time.perf_counter() < deadline:
        record = _read_timing(timing, seq)
        if record is None:
            session.pump(0.005)
    if record is None:
        return (False, timeout_s * 1000, t_out, True)
    t_in = float(record["ms"])
    if record.get("engine_ms") is not None:
        engine_ms.append(float(record["engine_ms"]))
    if os.environ.get("MAMBOMEME_BENCH_DEBUG"):
        print(
            f"send->accept {(record['accepted_epoch'] - t0_epoch) * 1000:.1f} ms, "
            f"inside {t_in:.1f}, drawn->seen {(seen_epoch - record['drawn_epoch']) * 1000:.1f}",
            file=sys.stderr,
        )
    if t_in > timeout_s * 1000:
        return (False, timeout_s * 1000, t_out, True)
    return (not record["error"], t_in, t_out, False)
