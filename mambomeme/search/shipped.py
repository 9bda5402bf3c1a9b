"""What ships: the system and frozen search settings a user gets when they do not ask for one.

The tuning stage freezes a selection (`selection.json`: the tuned config of the routes, RRF k,
depth and evidence thresholds, and the abstention model trained for it); the pipeline scores
exactly that as the scorecard row `shipped` (stage run_shipped). Served:
  1. the selection a published release carries (it is what was released), else
  2. `<reports of the corpus>/selection.json`,
  3. else params.yaml's `search` defaults and the default system (nothing tuned yet).
The system is named by the routes that keep a positive weight (search/systems.system_for), so a
selection that gives the dense route no weight serves a lexical system and never loads the
model. A selection with a usefulness model serves every route (EVERY_ROUTE_SYSTEM): the model
reads the dense route's evidence even where fusion gives it no weight.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mambomeme.errors import MamboMemeError
from mambomeme.search.systems import DEFAULT_SYSTEM, EVERY_ROUTE_SYSTEM, system_for

SELECTION_FILE = "selection.json"


@dataclass(frozen=True)
class Shipped:
    system: str
    params: dict[str, Any]  # params with `search` set to the frozen selection
    source: str  # where the selection came from, for the user


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MamboMemeError(f"{path}: cannot read: {exc}") from None
    if not isinstance(data, dict):
        raise MamboMemeError(f"{path}: expected a JSON object")
    return data


def set_search_keys(search: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a `search` params block with each dotted config key ("route_weights.dense",
    "min_cosine", ...) set."""
    result = copy.deepcopy(dict(search))
    for dotted, value in config.items():
        node = result
        *parents, leaf = str(dotted).split(".")
        for part in parents:
            child = node.get(part)
            if not isinstance(child, dict):
                raise MamboMemeError(
                    f"config key {dotted!r}: search params have no mapping {part!r}"
                )
            node = child
        node[leaf] = value
    return result


def apply_config(params: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
    """params with each dotted key of a selection's config set in `search`."""
    out = copy.deepcopy(dict(params))
    out["search"] = set_search_keys(out.get("search", {}), config)
    return out


def shipped(params: Mapping[str, Any], served: Path, reports: Path | None) -> Shipped:
    """The shipped system for the build or release at `served` (see the module docstring)."""
    candidates = [Path(served) / SELECTION_FILE]
    if reports is not None:
        candidates.append(Path(reports) / SELECTION_FILE)
    found = next((p for p in candidates if p.exists()), None)
    if found is None:
        return Shipped(DEFAULT_SYSTEM, copy.deepcopy(dict(params)), "params.yaml defaults")
    return from_selection(params, found)


def from_selection(params: Mapping[str, Any], found: Path) -> Shipped:
    """The system and params that the frozen selection at `found` serves."""
    selection = _read_json(found)
    config = dict(selection.get("config") or {})
    if not config:
        raise MamboMemeError(f"{found}: no frozen config")
    merged = apply_config(params, config)
    abstention = selection.get("abstention")
    merged["search"]["abstention"] = abstention if isinstance(abstention, dict) else None
    useful = selection.get("usefulness")
    merged["search"]["usefulness"] = useful if isinstance(useful, dict) else None
    weights = merged["search"]["route_weights"]
    note = str(found) + (" with abstention" if merged["search"]["abstention"] else "")
    note += " with the usefulness model" if merged["search"]["usefulness"] else ""
    # the usefulness model reads every route's evidence, whatever fusion weighs
    system = EVERY_ROUTE_SYSTEM if merged["search"]["usefulness"] else system_for(weights)
    return Shipped(system, merged, note)
