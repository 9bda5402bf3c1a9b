"""The route registry: every route a system may name, by name (routes/base.py says what a
route is). Adding a route = its module, an entry here, its `search.route_weights.<name>` and
evidence param in params.yaml, and the build stage of whatever index it reads."""

from __future__ import annotations

from mambomeme.search.routes.base import Route, Signal
from mambomeme.search.routes.dense import DenseRoute
from mambomeme.search.routes.lexical import LexicalRoute
from mambomeme.search.routes.typo import TypoRoute

ROUTES: dict[str, type[Route]] = {
    LexicalRoute.name: LexicalRoute,
    TypoRoute.name: TypoRoute,
    DenseRoute.name: DenseRoute,
}


def signal_of(name: str) -> Signal:
    """What a route's scores mean; OTHER for a name that is not a route (e.g. "rerank", or a
    route of an old run)."""
    route = ROUTES.get(name)
    return Signal.OTHER if route is None else route.signal
