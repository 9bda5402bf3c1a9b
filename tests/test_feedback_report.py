"""`mambomeme feedback report|export` over events written by the real FeedbackLog.

Every expected value is arithmetic on the events written in `events_file` below.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from mambomeme import feedback as feedback_report
from mambomeme.cli import main
from mambomeme.tui.feedback import FeedbackLog, Versions

VA = Versions(dataset="fixture:abc", retriever="hybrid:def", interface="mambomeme-tui-1")
VB = Versions(dataset="fixture:abc", retriever="bm25:xyz", interface="mambomeme-tui-2")
VOLD = Versions(dataset="fixture:old", retriever="hybrid:def", interface="mambomeme-tui-1")
SHOWN = [(f"id-{k}", k) for k in range(1, 21)]
BASE = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=2)


def query(qid: str, slice_: str, text: str, **extra: Any) -> dict[str, Any]:
    return {
        "qid": qid,
        "family": f"f-{qid}",
        "slice": slice_,
        "text": text,
        "answerable": True,
        **extra,
    }


BENCH_QUERIES = [
    query("q1", "entity", "john cena"),
    query("q2", "entity", "the rock"),
    query("q3", "entity", "surprised pikachu"),
    query("q4", "quote", "you can't see me"),
    query("q5", "quote", "are you sure about that"),
    query("q6", "visual", "disaster girl", cues=["house fire"]),
]


@dataclass
class Clock:
    now: datetime

    def __call__(self) -> datetime:
        return self.now


class Session:
    """One launch of the logger with a clock at BASE + offset seconds."""

    def __init__(self, path: Path, versions: Versions, start: datetime = BASE) -> None:
        self.start = start
        self.clock = Clock(start)
        self.log = FeedbackLog(path, versions, enabled=True, clock=self.clock)

    def at(
        self,
        seconds: float,
        action: str,
        request: str,
        cues: list[str],
        ms: float,
        target: int | None = None,
    ) -> None:
        self.clock.now = self.start + timedelta(seconds=seconds)
        item = None if target is None else (f"id-{target}", target)
        assert self.log.record(action, request, cues, SHOWN, ms, item) is not None


def events_file(tmp_path: Path) -> Path:
    """35 lines: 32 valid events (one older than 30 days, one 10 days old) and 3 corrupt."""
    path = tmp_path / "state" / "events.jsonl"
    old = Session(path, VA, start=BASE - timedelta(days=31))  # line 1: past the retention
    old.at(0, "choose", "r-old", ["john cena"], 500.0, 1)
    week = Session(path, VOLD, start=BASE - timedelta(days=10))  # line 2: inside 30, not 7 days
    week.at(0, "choose", "r-week", ["Disaster  Girl", "house fire"], 700.0, 5)
    a = Session(path, VA)  # lines 3..12
    a.at(2, "preview", "rA1", ["John Cena"], 2000.0, 2)
    a.at(3, "choose", "rA1", ["John Cena"], 3000.0, 2)
    a.at(20, "reformulate", "rA2", ["the rock"], 10000.0)  # next search 10 s after render
    a.at(31, "open", "rA3", ["the rock meme"], 1000.0, 1)
    a.at(32, "copy", "rA3", ["the rock meme"], 2000.0, 1)
    a.at(120, "reformulate", "rA3", ["the rock meme"], 90000.0)  # 90 s: a new need, not one
    a.at(121.5, "choose", "rA4", ["surprised pikachu"], 1500.0, 1)
    a.at(124, "choose", "rA4", ["surprised pikachu"], 4000.0, 3)  # second choose: not counted
    a.at(130, "choose", "rA5", ["you can't see me"], 8000.0, 12)  # beyond the top 10
    a.at(140, "abandon", "rA6", ["are you sure about that"], 5000.0)  # quit, nothing touched
    with path.open("ab") as handle:  # lines 13, 14, 15
        handle.write(b"{not json\n")
        handle.write(b'{"caf\xe9": 1}\n')
        handle.write(b'{"schema_version": "interaction-v1"}\n')
    b = Session(path, VB)  # lines 16..35: 20 requests, each chosen at rank 1 or 2
    for i in range(20):
        b.at(200 + 10 * i, "choose", f"rB{i}", [f"filler {i}"], 1000.0 + 100 * i, i % 2 + 1)
    return path


def benchmark(tmp_path: Path) -> Path:
    folder = tmp_path / "bench"
    folder.mkdir()
    lines = [json.dumps(q) for q in BENCH_QUERIES]
    (folder / "queries.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def report_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[dict[str, Any], str]:
    assert main(["feedback", "report", "--json", *args]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


def rate(count: int, n: int) -> dict[str, Any]:
    return {"count": count, "n": n, "rate": count / n, "too_few": n < 20}


def test_every_metric_equals_the_hand_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = events_file(tmp_path)
    out = tmp_path / "out"
    data, err = report_json(
        capsys,
        "--feedback-file",
        str(path),
        "--benchmark",
        str(benchmark(tmp_path)),
        "--out",
        str(out),
    )
    assert "not benchmark truth" in data["observational"]
    assert data["source"]["lines"] == 35
    assert data["source"]["events"] == 32 - 1  # r-old is past the 30-day retention
    assert data["source"]["outside_window"] == 1
    assert [p["line"] for p in data["source"]["skipped_lines"]] == [13, 14, 15]
    reasons = [p["reason"] for p in data["source"]["skipped_lines"]]
    assert "invalid JSON" in reasons[0] and "invalid UTF-8" in reasons[1]
    assert "missing" in reasons[2]
    for line in (13, 14, 15):
        assert f"{path}:{line}: skipped:" in err

    overall = data["overall"]
    n = 1 + 6 + 20  # r-week, rA1..rA6, rB0..rB19
    assert overall["requests"] == n and overall["sessions"] == 3
    assert overall["rates"] == {
        "choose_top10": rate(1 + 1 + 1 + 20, n),  # r-week (5), rA1 (2), rA4 (1), rB*
        "choose": rate(1 + 1 + 1 + 1 + 20, n),  # ... and rA5 at rank 12
        "preview": rate(1, n),  # rA1
        "open": rate(1, n),  # rA3
        "copy": rate(1, n),  # rA3
        "reformulation": rate(1, n),  # rA2 (10 s); rA3's came after 90 s and it was touched
        "abandonment": rate(2, n),  # rA2, rA6
    }
    mrr = overall["mean_reciprocal_chosen_rank"]
    assert mrr["value"] == pytest.approx((1 / 5 + 1 / 2 + 1 / 1 + 0 + 10 * 1 + 10 * (1 / 2)) / n)
    assert mrr["n"] == n and mrr["too_few"] is False
    expected_ranks = {str(k): 0 for k in range(1, 11)} | {">10": 0}
    expected_ranks |= {"1": 1 + 10, "2": 1 + 10, "5": 1, ">10": 1}  # rA4, rA1, r-week, rA5
    assert overall["chosen_rank_distribution"] == expected_ranks
    times = sorted([700, 3000, 1500, 8000] + [1000 + 100 * i for i in range(20)])
    assert len(times) == 24
    assert overall["time_to_choose_ms"] == {
        "median": (times[11] + times[12]) / 2,  # (1900 + 2000) / 2
        "p90": times[math.ceil(0.9 * 24) - 1],  # nearest rank 22: 2900
        "n": 24,
        "too_few": False,
    }
    assert overall["time_to_choose_ms"]["median"] == 1950 and times[21] == 2900

    by_retriever = data["by_retriever"]
    assert sorted(by_retriever) == ["bm25:xyz", "hybrid:def"]
    bm25, hybrid = by_retriever["bm25:xyz"], by_retriever["hybrid:def"]
    assert bm25["requests"] == 20 and bm25["rates"]["choose_top10"] == rate(20, 20)
    assert bm25["rates"]["choose_top10"]["too_few"] is False
    assert bm25["mean_reciprocal_chosen_rank"]["value"] == pytest.approx((10 + 10 / 2) / 20)
    assert hybrid["requests"] == 7 and hybrid["sessions"] == 2
    assert hybrid["rates"]["choose_top10"] == rate(3, 7) and rate(3, 7)["too_few"] is True
    assert hybrid["rates"]["choose"] == rate(4, 7)
    assert hybrid["rates"]["reformulation"] == rate(1, 7)
    assert hybrid["rates"]["abandonment"] == rate(2, 7)
    assert hybrid["mean_reciprocal_chosen_rank"]["value"] == pytest.approx((1 / 5 + 1 / 2 + 1) / 7)
    assert hybrid["time_to_choose_ms"]["median"] == (1500 + 3000) / 2  # of 700, 1500, 3000, 8000
    assert hybrid["time_to_choose_ms"]["too_few"] is True
    assert {k: v["requests"] for k, v in data["by_interface"].items()} == {
        "mambomeme-tui-1": 7,
        "mambomeme-tui-2": 20,
    }
    assert {k: v["requests"] for k, v in data["by_dataset"].items()} == {
        "fixture:abc": 26,
        "fixture:old": 1,
    }

    by_slice = data["by_slice"]
    assert {k: v["requests"] for k, v in by_slice.items()} == {
        "(no benchmark match)": 1 + 20,  # rA3 and the fillers
        "entity": 3,  # rA1 ("John Cena", casefolded), rA2, rA4
        "quote": 2,  # rA5, rA6
        "visual": 1,  # r-week: "disaster girl | house fire" is the text | cues of q6
    }
    assert by_slice["entity"]["rates"]["choose_top10"] == rate(2, 3)
    assert by_slice["entity"]["rates"]["reformulation"] == rate(1, 3)
    assert by_slice["quote"]["rates"]["choose_top10"] == rate(0, 2)
    assert by_slice["quote"]["rates"]["choose"] == rate(1, 2)
    assert by_slice["quote"]["rates"]["abandonment"] == rate(1, 2)

    assert json.loads((out / "feedback-report.json").read_text()) == data
    assert (out / "feedback-chosen-rank.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_since_narrows_the_window(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = events_file(tmp_path)
    data, _ = report_json(capsys, "--feedback-file", str(path), "--since", "7")
    assert data["window"]["days"] == 7
    assert data["overall"]["requests"] == 6 + 20  # r-week (10 days) is out as well
    assert data["source"]["outside_window"] == 2
    assert data["overall"]["chosen_rank_distribution"]["5"] == 0
    assert "fixture:old" not in data["by_dataset"]
    wide, _ = report_json(capsys, "--feedback-file", str(path), "--since", "90")
    assert wide["window"]["days"] == 30  # never beyond the retention period
    assert wide["overall"]["requests"] == 27


def test_retention_boundary_with_an_injected_now(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    Session(path, VA).at(0, "choose", "r", ["q"], 1.0, 1)
    inside = feedback_report.select_events(path, BASE + timedelta(days=30))
    assert len(inside.events) == 1  # exactly 30 days old still counts
    with pytest.raises(feedback_report.NoEventsError, match="1 older than 30 days"):
        feedback_report.select_events(path, BASE + timedelta(days=30, milliseconds=1))


def test_text_report_marks_small_groups_and_says_it_is_observational(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = events_file(tmp_path)
    assert main(["feedback", "report", "--feedback-file", str(path), "--params", "none"]) == 0
    text = capsys.readouterr().out
    assert "not benchmark truth" in text and "rank and exposure biased" in text
    assert "Slices: none (no readable evaluation.benchmark in none" in text
    assert "choose within top 10          0.852  23/27\n" in text
    hybrid = text[text.index("  hybrid:def: 7 requests") :]
    assert "3/7  n<20" in hybrid.splitlines()[1]
    assert "By slice" not in text and "By retriever" in text


@pytest.mark.parametrize("content", [None, b"", b"\n\n"])
def test_missing_or_empty_file_says_no_events_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes | None
) -> None:
    path = tmp_path / "events.jsonl"
    if content is not None:
        path.write_bytes(content)
    assert main(["feedback", "report", "--feedback-file", str(path)]) == 1
    err = capsys.readouterr().err
    assert "no events" in err and str(path) in err


def test_only_corrupt_lines_are_named_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"\xff\xfe\n[1, 2]\n")
    assert main(["feedback", "report", "--feedback-file", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:1: skipped: invalid UTF-8" in err
    assert f"{path}:2: skipped: not a JSON object" in err
    assert "no events" in err and "2 unreadable lines" in err


def test_bad_since_and_bad_benchmark_are_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = events_file(tmp_path)
    assert main(["feedback", "report", "--feedback-file", str(path), "--since", "0"]) == 2
    assert "--since" in capsys.readouterr().err
    missing = tmp_path / "nobench"
    args = ["feedback", "report", "--feedback-file", str(path), "--benchmark", str(missing)]
    assert main(args) == 2
    assert "queries.jsonl" in capsys.readouterr().err


def test_export_refuses_without_confirmation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = events_file(tmp_path)
    out = tmp_path / "share.jsonl"
    assert main(["feedback", "export", "--feedback-file", str(path), "--out", str(out)]) == 2
    assert "--yes" in capsys.readouterr().err  # pytest's stdin is not a terminal
    assert not out.exists()


class FakeTty:
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("answer", "code"), [("", 1), ("n", 1), ("y", 0), ("YES", 0)])
def test_export_asks_on_a_terminal(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    answer: str,
    code: int,
) -> None:
    path = events_file(tmp_path)
    out = tmp_path / "share.jsonl"
    prompts: list[str] = []
    monkeypatch.setattr("sys.stdin", FakeTty())
    monkeypatch.setattr("builtins.input", lambda prompt: prompts.append(prompt) or answer)
    assert main(["feedback", "export", "--feedback-file", str(path), "--out", str(out)]) == code
    assert len(prompts) == 1 and "without query text" in prompts[0] and "[y/N]" in prompts[0]
    assert out.exists() == (code == 0)


def test_export_omits_queries_unless_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = events_file(tmp_path)
    source = []
    for line in path.read_bytes().splitlines():
        try:
            source.append(json.loads(line))
        except ValueError:
            continue
    source = [r for r in source if r.get("request_id") not in (None, "r-old")]
    plain, full = tmp_path / "plain.jsonl", tmp_path / "full.jsonl"
    base = ["feedback", "export", "--feedback-file", str(path), "--yes"]
    assert main([*base, "--out", str(plain)]) == 0
    assert main([*base, "--out", str(full), "--with-queries"]) == 0
    assert "wrote 31 events" in capsys.readouterr().out
    exported = [json.loads(x) for x in plain.read_text().splitlines()]
    assert len(exported) == 31 and all(r["query"] is None for r in exported)
    assert exported == [{**r, "query": None} for r in source]
    assert "cena" not in plain.read_text().lower()
    assert [json.loads(x) for x in full.read_text().splitlines()] == source
    assert plain.stat().st_mode & 0o777 == 0o600
    # an export without queries is still a report input: slices cannot be matched
    data, _ = report_json(
        capsys, "--feedback-file", str(plain), "--benchmark", str(benchmark(tmp_path))
    )
    assert data["by_slice"] == {"(query not exported)": data["overall"]}
    assert data["overall"]["requests"] == 27


def test_export_never_overwrites(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = events_file(tmp_path)
    out = tmp_path / "share.jsonl"
    out.write_text("mine\n")
    args = ["feedback", "export", "--feedback-file", str(path), "--out", str(out), "--yes"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert str(out) in err and "already exists" in err
    assert out.read_text() == "mine\n"


def test_export_of_nothing_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "share.jsonl"
    args = ["feedback", "export", "--feedback-file", str(tmp_path / "none"), "--out", str(out)]
    assert main([*args, "--yes"]) == 1
    assert "no events" in capsys.readouterr().err and not out.exists()


def test_report_module_has_no_network_code() -> None:
    modules = sorted(Path(feedback_report.__file__).parent.glob("*.py"))
    assert len(modules) >= 5  # the whole package, not only its __init__
    for module in modules:
        source = module.read_text()
        for word in ("socket", "urllib", "http", "requests"):
            assert f"import {word}" not in source, module
