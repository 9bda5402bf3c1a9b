"""The TUI latency harness: query loading, seeded equal blocks, and a short real PTY run."""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from pathlib import Path

import pytest

from mambomeme.cli import main
from mambomeme.tui.harness import BenchError, load_queries, percentiles, schedule


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_load_queries_reads_text_field(tmp_path: Path) -> None:
    path = write(
        tmp_path / "q.jsonl",
        ['{"qid": "a", "text": "john  cena"}', "", '{"qid": "b", "text": "sleepy robot"}'],
    )
    assert load_queries(path) == ["john cena", "sleepy robot"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "q.jsonl:1: not JSON"),
        ('{"qid": "a"}', "q.jsonl:1:text: missing or empty"),
        ('{"text": "  "}', "q.jsonl:1:text: missing or empty"),
    ],
)
def test_load_queries_names_the_bad_line(tmp_path: Path, line: str, message: str) -> None:
    with pytest.raises(BenchError, match=message):
        load_queries(write(tmp_path / "q.jsonl", [line]))


def test_load_queries_missing_file(tmp_path: Path) -> None:
    with pytest.raises(BenchError, match="--queries: cannot read"):
        load_queries(tmp_path / "nope.jsonl")


def test_schedule_repeats_every_query_equally_in_seeded_blocks() -> None:
    texts = ["a", "b", "c"]
    order = schedule(texts, 1000, random.Random(7))
    assert len(order) == 1002  # rounded up to whole blocks of 3
    assert Counter(order) == {"a": 334, "b": 334, "c": 334}
    assert all(sorted(order[i : i + 3]) == texts for i in range(0, len(order), 3))
    assert order == schedule(texts, 1000, random.Random(7))
    assert order != schedule(texts, 1000, random.Random(8))


def test_percentiles_linear() -> None:
    figures = percentiles([float(v) for v in range(1, 101)])
    assert figures["p50_ms"] == pytest.approx(50.5)
    assert figures["p95_ms"] == pytest.approx(95.05)
    assert figures["p99_ms"] == pytest.approx(99.01)
    assert math.isnan(percentiles([])["p50_ms"])


@pytest.mark.slow
def test_bench_tui_runs_the_real_tui_in_a_pty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MAMBOMEME_FAKE_DENSE_DELAY", "0.1")
    queries = write(
        tmp_path / "q.jsonl",
        ['{"text": "john cena"}', '{"text": "blue teapot"}', '{"text": "zzz nothing"}'],
    )
    out = tmp_path / "latency.json"
    code = main(
        [
            "bench",
            "tui",
            "--fake-engine",
            "--build",
            str(tmp_path / "build"),
            "--queries",
            str(queries),
            "--warmups",
            "3",
            "--measured",
            "6",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    report = json.loads(out.read_text())
    assert report["measured"] == 6 and report["warmups"] == 3 and report["blocks"] == 2
    assert report["errors"] == 0 and report["error_rate"] == 0.0
    assert report["semantic"] == "ready"
    assert 0 < report["inside"]["p50_ms"] <= report["inside"]["p99_ms"]
    assert report["pty"] == "80x24 TERM=xterm-256color (pexpect + pyte)"
    assert "p95" in capsys.readouterr().out
