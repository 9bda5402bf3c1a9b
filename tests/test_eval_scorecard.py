"""Scorecard end to end through `mambomeme score`, atomic publication, and `mambomeme run`."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from test_eval_support import GOOD, make_run, response, tiny

from mambomeme import cli
from mambomeme.evaluation import plots, report
from mambomeme.evaluation.evaluate import execute_run
from mambomeme.evaluation.runs import read_run, sidecar, write_run
from mambomeme.search.results import Filters, SearchResponse

WORSE = {**GOOD, "invisible man": [], "cannot be seen": ["fx:9"], "john cena": ["fx:3", "fx:1"]}
SYSTEMS = {"hybrid-no-title": WORSE, "hybrid": GOOD, "dense": WORSE, "bm25": WORSE}


def _setup(tmp_path: Path) -> tuple[Path, list[Path], Path]:
    benchmark = tiny(tmp_path)
    paths = []
    for system, answers in SYSTEMS.items():
        path = tmp_path / "runs" / f"{system}.trec"
        write_run(path, make_run(benchmark, answers, system))
        paths.append(path)
    params = tmp_path / "params.yaml"
    params.write_text(
        "base:\n  seed: 5\nevaluation:\n  bootstrap:\n    seed: 99\n    resamples: 40\n"
    )
    return benchmark.path, paths, params


def _score(bench: Path, runs: list[Path], params: Path, out: Path, *extra: str) -> int:
    argv = [
        "score",
        "--benchmark",
        str(bench),
        "--runs",
        *map(str, runs),
        "--out-dir",
        str(out),
        "--params",
        str(params),
        *extra,
    ]
    return cli.main(argv)


def test_score_command_writes_the_scorecard(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench, runs, params = _setup(tmp_path)
    gates = tmp_path / "gates.json"
    gates.write_text(
        json.dumps(
            {
                "submit_to_render_p95_ms": 300,
                "release_protocol": True,
                "publication_rollback": True,
                "terminal_restoration": True,
            }
        )
    )
    out = tmp_path / "reports"
    assert _score(bench, runs, params, out, "--gates-input", str(gates)) == 0
    printed = capsys.readouterr().out
    assert "decision: keep the dense route in the default (hybrid)" in printed
    card = json.loads((out / "scorecard.json").read_text())
    assert [r["system"] for r in card["systems"]] == ["bm25", "dense", "hybrid", "hybrid-no-title"]
    hybrid = card["systems"][2]
    assert hybrid["status"] == "PASS" and hybrid["mmts"] == hybrid["mmts_raw"]
    assert set(hybrid["components"]) == {"Q", "E", "C", "S", "L", "R"}
    assert {g["name"] for g in hybrid["gates"]} >= {"critical_violation", "slice_ndcg", "exact_mrr"}
    assert card["bootstrap"] == {"seed": 99, "resamples": 40, "unit": "query family"}
    assert card["versions"]["score_version"] == "MMTS-Search-v1"
    assert card["versions"]["safety_policy"] == "v1"
    assert card["versions"]["judgement_set"] == "j1"
    assert card["versions"]["corpus_manifest_sha256"] == "m" * 64
    pairs = [(d["system"], d["baseline"]) for d in card["differences"]]
    assert pairs == [
        ("dense", "bm25"),
        ("hybrid", "bm25"),
        ("hybrid-no-title", "bm25"),
        ("hybrid-no-title", "hybrid"),
    ]
    assert card["acceptance"]["keep_dense"] is True and card["acceptance"]["official"] is False
    md = (out / "scorecard.md").read_text()
    assert "| hybrid |" in md and "Decision: keep the dense route" in md and "PROVISIONAL" in md
    # the card opens with the summary (what ships, why, headline numbers, gates) and a glossary
    order = [md.index(h) for h in ("## Summary", "## Glossary", "## Versions", "## Systems")]
    assert order == sorted(order)
    summary = md[md.index("## Summary") : md.index("## Glossary")]
    assert "**Ships: `hybrid`**" in summary and "not official" in summary
    assert "| hybrid | " + f"{hybrid['mmts']:.2f} | PASS |" in summary
    assert "- `exact_mrr` FAIL: bm25 (0.500), dense (0.500), hybrid-no-title (0.500)" in summary
    assert "Every gate passes for: hybrid." in summary
    glossary = md[md.index("## Glossary") : md.index("## Versions")]
    for term in ("**Q**", "**E**", "**C**", "**S**", "**L**", "**R**", "**The cap**"):
        assert term in glossary
    assert "0.55 Q + 0.15 E + 0.10 C + 0.10 S + 0.05 L + 0.05 R" in glossary
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["hybrid.mmts"] == hybrid["mmts"] and metrics["acceptance.keep_dense"] == 1
    per_system = json.loads((out / "metrics" / "hybrid.json").read_text())
    assert per_system["MMTS"] == hybrid["mmts"] and per_system["pass"] == 1
    assert per_system["Hit@10"] == hybrid["coverage"]["hit@10"]
    assert sorted(p.name for p in (out / "metrics").iterdir()) == [
        "bm25.json",
        "dense.json",
        "hybrid-no-title.json",
        "hybrid.json",
    ]
    rows = list(csv.DictReader((out / "plots" / "slice_ndcg.csv").open()))
    assert [r["slice"] for r in rows] == ["entity", "quote", "topic", "concept", "visual", "noisy"]
    assert float(rows[3]["hybrid"]) == pytest.approx(hybrid["slice_ndcg"]["concept"])
    latency = list(csv.DictReader((out / "plots" / "latency.csv").open()))
    assert len(latency) == 100 and float(latency[-1]["bm25"]) == pytest.approx(50.0)
    for png in ("slice_ndcg.png", "latency.png"):
        assert (out / "plots" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(out.rglob(".*tmp*"))


def test_without_gate_inputs_every_system_is_capped(tmp_path: Path) -> None:
    bench, runs, params = _setup(tmp_path)
    out = tmp_path / "reports"
    assert _score(bench, runs, params, out) == 0
    md = (out / "scorecard.md").read_text()
    summary = md[md.index("## Summary") : md.index("## Glossary")]
    assert "- `release_protocol` NOT EVALUATED: bm25, dense, hybrid, hybrid-no-title" in summary
    assert "Every gate passes for: no system." in summary
    # a system no longer scored leaves no stale metrics/<system>.json behind
    assert _score(bench, runs[:2], params, out) == 0  # hybrid-no-title and hybrid
    names = sorted(p.name for p in (out / "metrics").iterdir())
    assert names == ["hybrid-no-title.json", "hybrid.json"]


def test_publication_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bench, runs, params = _setup(tmp_path)
    out = tmp_path / "reports"
    assert _score(bench, runs, params, out) == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}

    def broken(card: Any) -> bytes:
        raise RuntimeError("plotting failed")

    monkeypatch.setattr(plots, "latency_png", broken)
    with pytest.raises(RuntimeError, match="plotting failed"):
        _score(bench, runs[:2], params, out)
    after = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before  # nothing replaced, no temporary left behind

    monkeypatch.undo()
    real_fsync = report.os.fsync
    synced: list[int] = []

    def fsync_fails_on_third(fd: int) -> None:
        synced.append(fd)
        if len(synced) == 3:  # two temporaries are complete, the third write fails
            raise OSError("disk full")
        real_fsync(fd)

    monkeypatch.setattr(report.os, "fsync", fsync_fails_on_third)
    with pytest.raises(OSError, match="disk full"):
        _score(bench, runs[:2], params, out)
    assert len(synced) == 3
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_score_refuses_mismatched_versions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench, runs, params = _setup(tmp_path)
    meta_path = sidecar(runs[0], ".meta.json")
    meta = json.loads(meta_path.read_text())
    meta["judgement_set"] = "j0"
    meta_path.write_text(json.dumps(meta))
    assert _score(bench, runs, params, tmp_path / "reports") == 2
    assert "judgement_set is 'j0'" in capsys.readouterr().err
    assert not (tmp_path / "reports").exists()


class FakeEngine:
    items: dict[str, Any] = {}

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], int, Filters | None, str]] = []

    def systems(self) -> tuple[str, ...]:
        return ("bm25", "dense", "hybrid")

    def embedding_manifest(self, system: str) -> Path | None:
        return None

    def search(
        self,
        cues: list[str],
        limit: int = 10,
        filters: Filters | None = None,
        system: str = "hybrid",
    ) -> SearchResponse:
        self.calls.append((cues, limit, filters, system))
        return response(GOOD[cues[0]])


def test_execute_run_and_refusals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    benchmark = tiny(tmp_path)
    manifest = tmp_path / "corpus.json"
    manifest.write_text('{"corpus": "fixture"}\n')
    engine = FakeEngine()
    out = tmp_path / "runs" / "hybrid.trec"
    execute_run(engine, benchmark, "hybrid", out, tmp_path, manifest, 10, force=False)
    assert {c[3] for c in engine.calls} == {"hybrid"} and {c[1] for c in engine.calls} == {10}
    run = read_run(out, benchmark)
    assert (
        run.meta.provenance is not None
        and run.meta.provenance.corpus_manifest == str(manifest)
        and len(run.meta.corpus_manifest_sha256) == 64
    )
    argv = ["run", "--benchmark", str(benchmark.path), "--system", "hybrid", "--out", str(out)]
    assert cli.main(argv) == 2
    assert "exists; pass --force" in capsys.readouterr().err
    with pytest.raises(Exception, match="unknown system 'hybrid-no-x'"):
        execute_run(
            engine,
            benchmark,
            "hybrid-no-x",
            tmp_path / "x.trec",
            tmp_path,
            manifest,
            10,
            force=False,
        )


def test_summary_names_the_system_users_are_served() -> None:
    """The `shipped` row is the frozen selection; the summary says which engine system it is."""
    from mambomeme.evaluation.benchmark import BenchmarkInfo
    from mambomeme.evaluation.scorecard_types import (
        BootstrapSettings,
        ComponentScores,
        Coverage,
        SafetyRates,
        Scorecard,
        SystemRow,
        Versions,
    )
    from mambomeme.evaluation.summary import summary_lines

    row = SystemRow(
        system="shipped",
        mmts=85.0,
        status="PASS",
        mmts_raw=85.0,
        components=ComponentScores(0.7, None, None, None, None, None),
        coverage=Coverage(0.9, 0.9, None),
        safety=SafetyRates(1.0, 1.0, 0.0),
        latency_p95_ms=None,
        error_rate=0.0,
        gates=(),
        slice_ndcg={},
        slices={},
        diagnostics={},
        latency_ms=[],
        run_meta={"engine_system": "bm25+typo", "system": "shipped"},
    )
    info = BenchmarkInfo("bench", "v1", "dev", "fixture", "j1", True, False)
    versions = Versions(info, "x" * 64, "v1", "MMTS-Search-v1", None, None, None, None, None, {})
    card = Scorecard(versions, 1, 1, BootstrapSettings(1, 1), (row,), (), None, {})
    text = "\n".join(summary_lines(card))
    assert "`shipped` is the frozen dev selection as users get it: `bm25+typo` with" in text
    assert "| shipped | 85.00 | PASS |" in text
