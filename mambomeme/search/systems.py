"""System names: the one place that says what a system name means.

A system is the routes it searches (search/routes/), the fields it leaves out, and whether the
trained cross-encoder re-orders its top fused results (`+rerank`: a step after fusion, not a
route). Names:
  - a base system (`BASE_SYSTEMS`): bm25, bm25+typo, dense, hybrid, hybrid+rerank;
  - `<base>-no-<ablation>` for a base in `ABLATABLE` and an entry of params
    `search.ablations`: that system with the ablation's fields left out of every route (the
    lexical columns; routes with their own per-ablation index, like dense's
    `dense-no-<ablation>.npy`, read that one: the system's `variant`).
The CLI, the TUI and evaluation ask here (or the engine, which asks here) instead of testing
route names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mambomeme.errors import MamboMemeError

BASE_SYSTEMS: dict[str, tuple[str, ...]] = {
    "bm25": ("lexical",),
    "bm25+typo": ("lexical", "typo"),
    "dense": ("dense",),
    "hybrid": ("lexical", "typo", "dense"),
    "hybrid+rerank": ("lexical", "typo", "dense"),  # + the cross-encoder over the top N
}
RERANK_SUFFIX = "+rerank"
ABLATABLE = ("bm25", "dense", "hybrid")
ABLATION = "-no-"
DEFAULT_SYSTEM = "hybrid"  # served when nothing is tuned or asked for
QUICK_SYSTEM = "bm25"  # needs no model: the TUI serves it until the model has loaded
EVERY_ROUTE_SYSTEM = "hybrid"  # searches every route: what a usefulness model reads


@dataclass(frozen=True)
class System:
    name: str
    routes: tuple[str, ...]  # searched in this order (the order of the fused lists)
    without: frozenset[str]  # fields left out of every route (ablations)
    variant: str  # "" = the full indexes, else the ablation's name
    rerank: bool = False  # the top rerank.candidates re-ordered by the cross-encoder


def names(ablations: Mapping[str, Sequence[str]]) -> tuple[str, ...]:
    """Every system name, base systems first, under params `search.ablations`."""
    ablated = (f"{base}{ABLATION}{name}" for base in ABLATABLE for name in ablations)
    return (*BASE_SYSTEMS, *ablated)


def parse(name: str, ablations: Mapping[str, Sequence[str]]) -> System:
    """The system a name means (module docstring); an unknown name is an error naming all."""
    if name in BASE_SYSTEMS:
        return System(name, BASE_SYSTEMS[name], frozenset(), "", name.endswith(RERANK_SUFFIX))
    base, _, ablation = name.partition(ABLATION)
    if base in ABLATABLE and ablation in ablations:
        return System(name, BASE_SYSTEMS[base], frozenset(ablations[ablation]), ablation)
    raise MamboMemeError(f"unknown system {name!r}; known: {', '.join(names(ablations))}")


def system_for(weights: Mapping[str, float]) -> str:
    """The base system that searches the routes with a positive weight: the first of
    BASE_SYSTEMS with the fewest routes that has them all (no weight at all: bm25). Weights of
    names no system searches (an old selection's) are ignored."""
    named = {route for routes in BASE_SYSTEMS.values() for route in routes}
    wanted = {r for r in named if float(weights.get(r, 0.0)) > 0}
    fitting = [
        name
        for name, routes in BASE_SYSTEMS.items()
        if not name.endswith(RERANK_SUFFIX) and wanted <= set(routes)
    ]
    if not fitting:
        raise MamboMemeError(f"no base system searches all of the weighted routes {sorted(wanted)}")
    return min(fitting, key=lambda name: len(BASE_SYSTEMS[name]))
