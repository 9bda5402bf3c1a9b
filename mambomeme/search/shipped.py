"""What ships: the system and frozen search settings a user gets when they do not ask for one.

The tuning stage freezes a selection (`selection.json`: the tuned system and its config) and
the scorecard's acceptance rule decides whether the dense route earns its place. Served:
  1. the selection a published release carries (it is what was released), else
  2. `<reports of the corpus>/selection.json`, with the decision of `scorecard.json` beside it,
  3. else params.yaml's `search` defaults and the system `hybrid` (nothing tuned yet).
The system is named by the routes that keep a positive weight, so a selection that gives the
dense route no weight serves a lexical system and never loads the model; "ship BM25 alone"
sets the dense weight to 0.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mambomeme.errors import MamboMemeError

SELECTION_FILE = "selection.json"
SCORECARD_FILE = "scorecard.json"
SHIP_BM25 = "ship BM25 alone"  # = evaluation.acceptance.SHIP_BM25 (search does not import it)
DEFAULT_SYSTEM = "hybrid"


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


def system_for(weights: Mapping[str, float]) -> str:
    """The base system whose routes are the ones with a positive weight."""
    lexical, typo, dense = (float(weights.get(r, 0.0)) > 0 for r in ("lexical", "typo", "dense"))
    if dense and not (lexical or typo):
        return "dense"
    if dense:
        return "hybrid"
    return "bm25+typo" if typo else "bm25"


def apply_config(params: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
    """params with each dotted key of a selection's config set in `search`."""
    out = copy.deepcopy(dict(params))
    search = out.setdefault("search", {})
    for dotted, value in config.items():
        node = search
        *parents, leaf = str(dotted).split(".")
        for part in parents:
            child = node.get(part)
            if not isinstance(child, dict):
                raise MamboMemeError(f"selection key {dotted!r}: search has no mapping {part!r}")
            node = child
        node[leaf] = value
    return out


def shipped(params: Mapping[str, Any], served: Path, reports: Path | None) -> Shipped:
    """The shipped system for the build or release at `served` (see the module docstring)."""
    release_selection = Path(served) / SELECTION_FILE
    if release_selection.exists():
        selection, where, decision = _read_json(release_selection), str(release_selection), ""
    elif reports is not None and (Path(reports) / SELECTION_FILE).exists():
        selection = _read_json(Path(reports) / SELECTION_FILE)
        where = str(Path(reports) / SELECTION_FILE)
        card = Path(reports) / SCORECARD_FILE
        acceptance = _read_json(card).get("acceptance") if card.exists() else None
        decision = str((acceptance or {}).get("decision", ""))
    else:
        return Shipped(DEFAULT_SYSTEM, copy.deepcopy(dict(params)), "params.yaml defaults")
    config = dict(selection.get("config") or {})
    if not config:
        raise MamboMemeError(f"{where}: no frozen config")
    if decision == SHIP_BM25:
        config["route_weights.dense"] = 0.0
    merged = apply_config(params, config)
    weights = merged["search"]["route_weights"]
    note = f"{where}" + (f" ({decision})" if decision else "")
    return Shipped(system_for(weights), merged, note)
