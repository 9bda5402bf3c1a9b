"""Tuning: grid + refinement on dev only, simpler system on ties, full curve in selection.json."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from mambomeme.errors import TuningError, TuningOnHiddenError
from mambomeme.evaluation.tuning import load_selection, search_params, simplicity_key, tune
from mambomeme.release.protocol import benchmark_checksum

ROOT = Path(__file__).resolve().parents[1]

DEFAULTS = {
    "route_weights.lexical": 1.0,
    "route_weights.dense": 1.0,
    "rrf_k": 60,
    "depth": 100,
    "min_cosine": 0.35,
}


def make_benchmark(root: Path, partition: str = "dev") -> Path:
    root.mkdir(parents=True)
    meta = {
        "name": "fixture-bench",
        "version": "v1",
        "partition": partition,
        "corpus": "fixture@v1",
        "judgement_set": "j1",
        "provisional": True,
        "exposed": False,
    }
    (root / "benchmark.json").write_text(json.dumps(meta), encoding="utf-8")
    (root / "queries.jsonl").write_text(
        json.dumps(
            {
                "qid": "d-entity-001",
                "family": "fixture-john-cena",
                "slice": "entity",
                "text": "john cena",
                "answerable": True,
            }
        )
        + "\n",
        encoding="utf-8",
    )
    (root / "qrels.txt").write_text("d-entity-001 0 fixture:1 3\n", encoding="utf-8")
    return root


def small_grid(**extra: Any) -> dict[str, Any]:
    grid: dict[str, Any] = {
        "axes": {
            "route_weights.lexical": [0.0, 1.0, 2.0],
            "route_weights.dense": [0.0, 1.0, 2.0],
            "rrf_k": [30, 60, 90],
            "depth": [50, 100],
            "min_cosine": [0.25, 0.35, 0.45],
        },
        "defaults": DEFAULTS,
        "refine_points": 2,
        "refine_rounds": 1,
    }
    grid.update(extra)
    return grid


def test_finds_interior_optimum_and_refines_around_it(tmp_path: Path) -> None:
    bench = make_benchmark(tmp_path / "dev")

    def evaluate(config: dict[str, Any]) -> float:
        # peak at lexical 1.0, dense 0.6 (between grid values 0 and 1), k 50, depth irrelevant
        if config["route_weights.lexical"] == 0 and config["route_weights.dense"] == 0:
            raise AssertionError("an all-zero point must never be evaluated")
        return (
            1.0
            - (config["route_weights.lexical"] - 1.0) ** 2
            - (config["route_weights.dense"] - 0.6) ** 2
            - ((config["rrf_k"] - 50) / 100) ** 2
        )

    out = tmp_path / "selection.json"
    selection = tune(bench, evaluate, small_grid(), out=out)
    # refinement put dense at 0.666667 (two thirds of the way from 0 to 1 is 0.666667; one third
    # is 0.333333): the closer one to 0.6 wins; k refined to 50 (between 30 and 60)
    assert selection.config["route_weights.dense"] == pytest.approx(2 / 3, abs=1e-6)
    assert selection.config["rrf_k"] == 50
    assert selection.config["route_weights.lexical"] == 1.0
    # depth and min_cosine do not change the objective: the defaults win the tie
    assert selection.config["depth"] == 100
    assert selection.config["min_cosine"] == 0.35
    data = load_selection(out)
    assert data.benchmark["checksum"] == benchmark_checksum(bench)
    assert data.config == dict(selection.config)
    phases = {point["phase"] for point in data.curve}
    assert phases == {"grid", "refine-1"}
    grid_points = [p for p in data.curve if p["phase"] == "grid"]
    assert len(grid_points) == 3 * 3 * 3 * 2 * 3 - 3 * 2 * 3  # all-zero route points skipped
    assert data.skipped == 3 * 2 * 3
    assert max(p["objective"] for p in data.curve) == data.objective
    assert data == selection  # written and read back through one serialisation


def test_single_route_systems_are_eligible_and_win_ties(tmp_path: Path) -> None:
    bench = make_benchmark(tmp_path / "dev")

    def evaluate(config: dict[str, Any]) -> float:
        # the lexical route alone is as good as any hybrid: dense adds nothing
        return 0.5 if config["route_weights.lexical"] > 0 else 0.2

    selection = tune(bench, evaluate, small_grid())
    assert selection.config["route_weights.dense"] == 0.0  # fewer active routes wins the tie
    assert selection.config["route_weights.lexical"] == 1.0  # then the default-like value
    assert selection.config["rrf_k"] == 60

    def dense_only(config: dict[str, Any]) -> float:
        return 0.7 if config["route_weights.lexical"] == 0 else 0.4

    selection = tune(bench, dense_only, small_grid())
    assert (selection.config["route_weights.lexical"], selection.config["route_weights.dense"]) == (
        0.0,
        1.0,
    )


def test_tie_tolerance_prefers_simpler_within_tolerance(tmp_path: Path) -> None:
    bench = make_benchmark(tmp_path / "dev")

    def evaluate(config: dict[str, Any]) -> float:
        both = config["route_weights.lexical"] > 0 and config["route_weights.dense"] > 0
        return 0.5005 if both else 0.5

    assert tune(bench, evaluate, small_grid()).config["route_weights.dense"] > 0
    simple = tune(bench, evaluate, small_grid(tie_tolerance=0.001))
    assert simple.config["route_weights.dense"] == 0.0


def test_simplicity_order_is_explicit() -> None:
    spans = {name: 1.0 for name in DEFAULTS}
    hybrid = dict(DEFAULTS)
    single = {**DEFAULTS, "route_weights.dense": 0.0}
    odd_k = {**DEFAULTS, "rrf_k": 61}
    far_k = {**DEFAULTS, "rrf_k": 90}
    assert simplicity_key(single, DEFAULTS, spans) < simplicity_key(hybrid, DEFAULTS, spans)
    assert simplicity_key(hybrid, DEFAULTS, spans) < simplicity_key(odd_k, DEFAULTS, spans)
    assert simplicity_key(odd_k, DEFAULTS, spans) < simplicity_key(far_k, DEFAULTS, spans)


def test_refuses_hidden_before_reading_queries_or_qrels(tmp_path: Path) -> None:
    bench = make_benchmark(tmp_path / "held", partition="hidden")
    opened: list[str] = []
    active = [True]

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if active[0] and event == "open" and isinstance(args[0], str | Path):
            opened.append(str(args[0]))

    sys.addaudithook(hook)
    calls: list[dict[str, Any]] = []
    try:
        with pytest.raises(TuningOnHiddenError, match="hidden"):
            tune(bench, lambda c: calls.append(c) or 0.0, small_grid(), out=tmp_path / "s.json")
    finally:
        active[0] = False
    inside = [p for p in opened if str(bench) in p]
    assert inside == [str(bench / "benchmark.json")]
    assert calls == []
    assert not (tmp_path / "s.json").exists()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"axes": {"route_weights.lexical": [1.0], "route_weights.dense": [0.0, 1.0]}},
            "must include 0",
        ),
        ({"axes": {"route_weights.lexical": [0.0, 1.0]}}, "route_weights.dense"),
        ({"axes": {**small_grid()["axes"], "rrf_k": ["sixty"]}}, "not a number"),
        ({"defaults": {"route_weights.lexical": 1.0}}, "missing a default"),
        ({"refine_points": -1}, "refine_points"),
    ],
)
def test_bad_grid_is_named(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    bench = make_benchmark(tmp_path / "dev")
    with pytest.raises(TuningError, match=message):
        tune(bench, lambda c: 0.0, small_grid(**change))


def test_non_finite_objective_and_overwrite_refused(tmp_path: Path) -> None:
    bench = make_benchmark(tmp_path / "dev")
    with pytest.raises(TuningError, match="finite"):
        tune(bench, lambda c: float("nan"), small_grid())
    out = tmp_path / "selection.json"
    tune(bench, lambda c: 0.1, small_grid(), out=out)
    with pytest.raises(TuningError, match="overwrite"):
        tune(bench, lambda c: 0.1, small_grid(), out=out)


def test_search_params_sets_dotted_keys() -> None:
    base = {"rrf_k": 60, "route_weights": {"lexical": 1.0, "fuzzy": 0.5, "dense": 1.0}}
    out = search_params(base, {"route_weights.dense": 0.0, "rrf_k": 30})
    assert out == {"rrf_k": 30, "route_weights": {"lexical": 1.0, "fuzzy": 0.5, "dense": 0.0}}
    assert base["route_weights"]["dense"] == 1.0
    with pytest.raises(TuningError, match="no mapping"):
        search_params(base, {"rrf_k.x": 1})


@pytest.mark.parametrize(
    "path",
    [ROOT / "reports" / "selection.json", ROOT / "reports" / "memes-10k" / "selection.json"],
    ids=["fixture", "memes-10k"],
)
def test_committed_selections_round_trip_byte_for_byte(path: Path, tmp_path: Path) -> None:
    """selection.json has one serialisation: reading a committed one (with the abstention and
    usefulness fields the tune stage adds) and writing it back gives the same bytes."""
    from mambomeme.evaluation.tuning import write_selection

    selection = load_selection(path)
    assert selection.abstention_report is not None and "usefulness_report" in selection.added
    write_selection(selection, tmp_path / "selection.json")
    assert (tmp_path / "selection.json").read_bytes() == path.read_bytes()
