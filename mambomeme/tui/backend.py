"""What the TUI controller calls: an engine opened lazily on the search thread.

`Engine.open` reads the item table and the lexical index, which takes a while on a large corpus,
so it runs on the worker thread after the first draw (`open`), not before. The dense model loads
on another thread (`load_dense`: what the served system needs); until then the controller asks
for search/systems.QUICK_SYSTEM.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from mambomeme.corpus.schema import Item
from mambomeme.search.results import Filters, SearchResponse
from mambomeme.search.systems import DEFAULT_SYSTEM


class SearchEngine(Protocol):
    items: Mapping[str, Item]

    def search(
        self,
        cues: Sequence[str],
        limit: int = 10,
        filters: Filters | None = None,
        system: str = DEFAULT_SYSTEM,
    ) -> SearchResponse: ...

    def load(self, system: str) -> None: ...


class LazyEngine:
    def __init__(
        self, build_dir: Path, params: Mapping[str, Any], system: str = DEFAULT_SYSTEM
    ) -> None:
        self.build_dir = build_dir
        self.params = params
        self.system = system  # the served system, whose model `load_dense` loads
        self._engine: Any = None  # the Engine (or FakeEngine); see SearchEngine for its shape
        self._lock = threading.Lock()

    def open(self) -> Any:
        with self._lock:
            if self._engine is None:
                from mambomeme.search.engine import Engine

                self._engine = Engine.open(self.build_dir, self.params)
            return self._engine

    def search(
        self, cues: Sequence[str], limit: int, filters: Filters, system: str
    ) -> SearchResponse:
        response: SearchResponse = self.open().search(
            list(cues), limit=limit, filters=filters, system=system
        )
        return response

    def load_dense(self) -> None:
        self.open().load(self.system)

    def item(self, item_id: str) -> Item | None:
        engine = self._engine
        return None if engine is None else engine.items.get(item_id)


class FakeBackend(LazyEngine):
    """The in-memory test engine behind the same interface (--fake-engine)."""

    def open(self) -> Any:
        with self._lock:
            if self._engine is None:
                from mambomeme.tui.fake_engine import FakeEngine

                self._engine = FakeEngine(self.build_dir, **dict(self.params))
            return self._engine
