"""What ships is what users get: the frozen selection and the acceptance decision pick the
default system of `search`, the TUI and `run` (mambomeme/search/shipped.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mambomeme.search.shipped import SHIP_BM25, shipped, system_for

KEEP = "keep the dense route in the default (hybrid)"


def _write(folder: Path, weights: dict[str, float], decision: str | None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    config = {f"route_weights.{r}": w for r, w in weights.items()} | {"min_cosine": 0.5}
    (folder / "selection.json").write_text(json.dumps({"config": config}))
    if decision is not None:
        (folder / "scorecard.json").write_text(json.dumps({"acceptance": {"decision": decision}}))


def test_system_named_by_positive_weights() -> None:
    assert system_for({"lexical": 1, "typo": 0, "dense": 0}) == "bm25"
    assert system_for({"lexical": 1, "typo": 0.5, "dense": 0}) == "bm25+typo"
    assert system_for({"lexical": 0, "typo": 0, "dense": 1}) == "dense"
    assert system_for({"lexical": 1, "typo": 0.5, "dense": 2}) == "hybrid"


def test_selection_and_decision_choose_the_default(tmp_path: Path, params: dict[str, Any]) -> None:
    build = tmp_path / "build"
    build.mkdir()
    reports = tmp_path / "reports"
    _write(reports, {"lexical": 1.0, "typo": 0.5, "dense": 1.0}, KEEP)
    ship = shipped(params, build, reports)
    assert ship.system == "hybrid" and ship.params["search"]["min_cosine"] == 0.5
    assert ship.params["search"]["route_weights"]["dense"] == 1.0
    _write(reports, {"lexical": 1.0, "typo": 0.5, "dense": 1.0}, SHIP_BM25)
    ship = shipped(params, build, reports)
    assert ship.system == "bm25+typo" and ship.params["search"]["route_weights"]["dense"] == 0
    assert SHIP_BM25 in ship.source


def test_release_selection_wins_and_defaults_without_one(
    tmp_path: Path, params: dict[str, Any]
) -> None:
    release = tmp_path / "release"
    _write(release, {"lexical": 1.0, "typo": 0.0, "dense": 0.0}, None)
    reports = tmp_path / "reports"
    _write(reports, {"lexical": 1.0, "typo": 0.5, "dense": 1.0}, KEEP)
    assert shipped(params, release, reports).system == "bm25"
    plain = shipped(params, tmp_path / "nothing", tmp_path / "no-reports")
    assert plain.system == "hybrid" and plain.params["search"] == params["search"]


def test_cli_search_serves_the_shipped_system(
    tmp_path: Path, fixture_build: Path, params: dict[str, Any], capsys: Any
) -> None:
    import yaml

    from mambomeme.cli import main

    reports = tmp_path / "reports"
    _write(reports, {"lexical": 1.0, "typo": 0.5, "dense": 1.0}, SHIP_BM25)
    local = dict(params, base=dict(params["base"], reports=str(reports)))
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(local))
    code = main(["search", "john cena", "--build", str(fixture_build), "--params", str(path),
                 "--json"])  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["system"] == "bm25+typo"
    assert out["system_from"].startswith("shipped: ") and SHIP_BM25 in out["system_from"]
