"""Adding a route needs no engine change: a toy route defined here, entered in the registry and
in a system, is served by the real engine over the fixture with fusion, the eligibility mask
and its own evidence rule."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from mambomeme.search import systems
from mambomeme.search.engine import Engine
from mambomeme.search.results import RouteHit
from mambomeme.search.routes import ROUTES, signal_of
from mambomeme.search.routes.base import (
    CueEvidence,
    CueHits,
    Lap,
    RouteContext,
    RouteQuery,
    Signal,
)


class IdRoute:
    """Items whose id holds every content token of the cue, in id order, each scored 1.0."""

    name: ClassVar[str] = "id"
    evidence_param: ClassVar[str] = "min_id_score"
    signal: ClassVar[Signal] = Signal.OTHER

    def __init__(self, context: RouteContext) -> None:
        self.ids = context.items.ids

    def load(self, variant: str) -> None:
        """Nothing to load."""

    def embedding_manifest(self, variant: str) -> Path | None:
        return None

    def candidates(self, query: RouteQuery, lap: Lap) -> list[CueHits]:
        found = []
        for cue in query.cues:
            rows = [
                row
                for row, item_id in enumerate(self.ids)
                if query.mask[row] and all(token in item_id for token in cue.content)
            ]
            found.append(CueHits(cue.index, [(row, 1.0) for row in rows[: query.depth]]))
        return found

    def has_evidence(self, hit: RouteHit, cue: CueEvidence, minimum: float) -> bool:
        return hit.score >= minimum


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setitem(ROUTES, IdRoute.name, IdRoute)
    monkeypatch.setitem(systems.BASE_SYSTEMS, "id", ("id",))
    monkeypatch.setitem(systems.BASE_SYSTEMS, "bm25+id", ("lexical", "id"))
    yield


def _engine(fixture_build: Path, params: dict[str, Any], min_id_score: float) -> Engine:
    weights = {**params["search"]["route_weights"], "id": 1.0}
    search = {**params["search"], "route_weights": weights, "min_id_score": min_id_score}
    return Engine.open(fixture_build, {**params, "search": search})


@pytest.mark.usefixtures("registered")
def test_a_new_route_is_fused_with_lexical(fixture_build: Path, params: dict[str, Any]) -> None:
    engine = _engine(fixture_build, params, 0.5)
    assert {"id", "bm25+id"} <= set(engine.systems())
    results = engine.search(["evil kermit"], limit=10, system="bm25+id").results
    assert results and "evil-kermit" in results[0].item_id  # the template or one of its memes
    k, weights = engine.config.rrf_k, engine.config.route_weights
    for r in results:
        assert ("id" in r.routes) == ("evil-kermit" in r.item_id)
        fused = sum(weights[h.route] / (k + h.rank) for h in r.hits)
        assert r.fused_score == pytest.approx(fused / (weights["lexical"] + weights["id"]))
    assert {"lexical", "id"} <= set(results[0].routes)


@pytest.mark.usefixtures("registered")
def test_a_new_route_sees_only_eligible_items(fixture_build: Path, params: dict[str, Any]) -> None:
    engine = _engine(fixture_build, params, 0.5)
    shown = [r.item_id for r in engine.search(["cena"], limit=50, system="id").results]
    assert shown and all("john-cena" in i and engine.items[i].eligible for i in shown)
    hidden = {i for i in engine.items if "cena" in i and not engine.items[i].eligible}
    assert hidden and not hidden & set(shown)  # draft, removed, unlicensed
    assert not engine.search(["unsafe"], limit=50, system="id").results  # all masked unsafe


@pytest.mark.usefixtures("registered")
def test_a_new_route_applies_its_own_evidence_rule(
    fixture_build: Path, params: dict[str, Any]
) -> None:
    engine = _engine(fixture_build, params, 2.0)  # no hit of the id route scores 2
    alone = engine.search(["cena"], limit=10, system="id")
    assert not alone.results and alone.empty_reason == "no candidate had enough evidence"
    both = engine.search(["kermit"], limit=10, system="bm25+id").results
    assert both and all("lexical" in r.routes for r in both)  # shown for lexical evidence only


def test_signals_name_what_a_route_measures() -> None:
    assert signal_of("dense") is Signal.MEANING and signal_of("lexical") is Signal.WORDS
    assert signal_of("rerank") is Signal.OTHER  # a post-fusion step, not a route


def test_system_names_parse_in_one_place() -> None:
    ablations = {"knowledge": ["template_meaning"]}
    spec = systems.parse("dense-no-knowledge", ablations)
    assert (spec.routes, spec.variant, spec.without) == (
        ("dense",),
        "knowledge",
        frozenset({"template_meaning"}),
    )
    assert systems.parse("hybrid+rerank", ablations).rerank
    assert "bm25-no-knowledge" in systems.names(ablations)
    with pytest.raises(Exception, match="unknown system 'hybrid-no-x'"):
        systems.parse("hybrid-no-x", ablations)
    assert systems.system_for({"lexical": 1, "fuzzy": 0.5}) == "bm25"  # old names are ignored
