"""The checks stage's library (evaluation/checks.py) on the fixture: the check side, a second
check assembled from its newest judgement set, and the tune side for extra selections only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mambomeme.evaluation import judgement_sets as js
from mambomeme.evaluation.benchmark import load_benchmark
from mambomeme.evaluation.checks import Runner, score_targets, targets
from mambomeme.evaluation.split import Split, write_no_check

ROOT = Path(__file__).resolve().parents[1]


def test_check_side_second_check_and_tune_for_extra_labels_only(
    tmp_path: Path, fixture_build: Path, lexical_engine: Any, params: dict[str, Any]
) -> None:
    queries = load_benchmark(ROOT / "benchmarks" / "fixture").queries
    split = Split("fixture-check", 0.34)
    latest = js.versions(ROOT / "judgement-sets" / "fixture", "fixture")[-1][1]
    sides = {}
    for side in ("tune", "check"):
        qids = frozenset(q.qid for q in queries if split.side(q.family) == side)
        sides[side] = tmp_path / side
        js.write_scored_benchmark(ROOT / "benchmarks" / "fixture", latest, sides[side], {}, qids)
    run_dir = tmp_path / "runs-check"
    found = targets(
        sides["check"], ["fixture"], ROOT / "benchmarks", ROOT / "judgement-sets", run_dir,
        (sides["tune"], frozenset({"old"})),
    )  # fmt: skip
    assert [t.name for t in found] == ["check", "tune", "fixture"]
    assert (run_dir / "fixture" / "benchmark" / "qrels.txt").is_file()
    runners = [Runner(s, lexical_engine, s, params) for s in ("bm25", "bm25+typo")]
    runners.append(Runner("old", lexical_engine, "bm25", params))
    manifest = fixture_build / "corpus-fixture.json"
    result = score_targets(found, runners, run_dir, fixture_build, manifest, None, 7, 20)
    check, tune, second = (result["targets"][n] for n in ("check", "tune", "fixture"))
    assert check["queries"] == len(load_benchmark(sides["check"]).queries) < len(queries)
    assert set(check["systems"]) == {"bm25", "bm25+typo", "old"}
    assert set(tune["systems"]) == {"old"}  # the scorecard scores the rest on the tune side
    assert second["queries"] == len(queries) and second["judgement_set"] == latest.name
    assert check["systems"]["old"]["mmts_raw"] == check["systems"]["bm25"]["mmts_raw"]
    assert (run_dir / "check" / "old.trec").is_file()


def test_no_check_split_means_no_check_target(tmp_path: Path) -> None:
    write_no_check(tmp_path / "benchmark-check")
    found = targets(
        tmp_path / "benchmark-check", [], ROOT / "benchmarks", ROOT / "judgement-sets",
        tmp_path / "runs", (tmp_path / "tune", frozenset({"old"})),
    )  # fmt: skip
    assert found == []
