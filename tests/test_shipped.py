"""What ships is what users get: the frozen selection (config and abstention) picks the
default system of `search`, the TUI and `run` (mambomeme/search/shipped.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mambomeme.search.shipped import shipped
from mambomeme.search.systems import system_for


def _write(folder: Path, weights: dict[str, float], abstention: dict[str, Any] | None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    config = {f"route_weights.{r}": w for r, w in weights.items()} | {"min_cosine": 0.5}
    selection = {"config": config, "abstention": abstention}
    (folder / "selection.json").write_text(json.dumps(selection))


def test_system_named_by_positive_weights() -> None:
    assert system_for({"lexical": 1, "typo": 0, "dense": 0}) == "bm25"
    assert system_for({"lexical": 1, "typo": 0.5, "dense": 0}) == "bm25+typo"
    assert system_for({"lexical": 0, "typo": 0, "dense": 1}) == "dense"
    assert system_for({"lexical": 1, "typo": 0.5, "dense": 2}) == "hybrid"


def test_selection_chooses_the_default(tmp_path: Path, params: dict[str, Any]) -> None:
    build = tmp_path / "build"
    build.mkdir()
    reports = tmp_path / "reports"
    _write(reports, {"lexical": 1.0, "typo": 0.5, "dense": 1.0}, None)
    ship = shipped(params, build, reports)
    assert ship.system == "hybrid" and ship.params["search"]["min_cosine"] == 0.5
    assert ship.params["search"]["route_weights"]["dense"] == 1.0
    assert ship.params["search"]["abstention"] is None
    _write(reports, {"lexical": 1.0, "typo": 0.5, "dense": 0.0}, {"threshold": 0.5})
    ship = shipped(params, build, reports)
    assert ship.system == "bm25+typo" and ship.params["search"]["abstention"] == {"threshold": 0.5}
    assert "with abstention" in ship.source


def test_release_selection_wins_and_defaults_without_one(
    tmp_path: Path, params: dict[str, Any]
) -> None:
    release = tmp_path / "release"
    _write(release, {"lexical": 1.0, "typo": 0.0, "dense": 0.0}, None)
    reports = tmp_path / "reports"
    _write(reports, {"lexical": 1.0, "typo": 0.5, "dense": 1.0}, None)
    assert shipped(params, release, reports).system == "bm25"
    plain = shipped(params, tmp_path / "nothing", tmp_path / "no-reports")
    assert plain.system == "hybrid" and plain.params["search"] == params["search"]


def test_cli_search_serves_the_shipped_system(
    tmp_path: Path, fixture_build: Path, params: dict[str, Any], capsys: Any
) -> None:
    import yaml

    from mambomeme.cli import main

    reports = tmp_path / "reports"
    _write(reports, {"lexical": 1.0, "typo": 0.5, "dense": 0.0}, None)
    corpora = dict(
        params["corpora"], fixture=dict(params["corpora"]["fixture"], reports=str(reports))
    )
    local = dict(params, corpora=corpora)  # load_params sets base.reports from the corpus
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(local))
    code = main(["search", "john cena", "--build", str(fixture_build), "--params", str(path),
                 "--json"])  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["system"] == "bm25+typo"
    assert out["system_from"] == f"shipped: {reports / 'selection.json'}"
