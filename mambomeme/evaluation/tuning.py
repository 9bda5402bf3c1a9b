"""Choose route weights, RRF k, candidate depth and the minimum-evidence threshold on dev data.

The search is finite and explicit (after the method of seeds/003):
1. Grid: every combination of the axis values (a point whose route weights are all 0 is no
   system and is skipped, counted in `skipped`). Every route axis must include 0, so the
   single-route systems (lexical only: dense weight 0; dense only: lexical weight 0) can win.
2. Refinement, `refine_rounds` times: for each axis in name order, holding the others at the
   current best, try `refine_points` evenly spaced values strictly between the best value and
   each tried neighbour on that axis (rounded to integers on integer axes); keep the best.
3. Ties (objective within `tie_tolerance` of the best) go to the simpler system, in order:
   a. fewer active routes (route weight > 0);
   b. fewer axes differing from the defaults (the params.yaml search values);
   c. smaller sum over axes of |value - default| / (axis span of the grid values);
   d. the config's canonical JSON, lexicographically (only to make the order total).
The result is the best tested point, not a global optimum. Config keys are dotted paths into
the `search` params block ("route_weights.dense", "rrf_k", "depth", "min_cosine", ...).

The benchmark's benchmark.json is checked (dev only) before anything else in the folder is
read; `evaluate(config) -> objective` is injected, so this module never reads queries or qrels.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mambomeme.config import TuningParams
from mambomeme.errors import MamboMemeError, TuningError
from mambomeme.release.protocol import (
    PROTOCOL_VERSION,
    benchmark_checksum,
    check_tuning_allowed,
    read_benchmark_meta,
)
from mambomeme.search.shipped import set_search_keys

ROUTE_PREFIX = "route_weights."
MAX_GRID_POINTS = 20_000
TIE_BREAK = (
    "objective within tie_tolerance of the best, then fewer active routes, then fewer axes "
    "differing from defaults, then smaller sum of |value - default| / axis span, then "
    "canonical config JSON"
)

Value = float | int
Config = dict[str, Value]


@dataclass(frozen=True)
class Selection:
    """The frozen tuning result that selection.json holds; `to_json`/`from_json` are its one
    serialisation (the file is written with sorted keys, so field order does not matter)."""

    config: Mapping[str, Value]
    objective: float
    benchmark: Mapping[str, Any]  # name, version, partition, corpus, judgement_set, checksum
    curve: tuple[Mapping[str, Any], ...]  # every evaluated point: config, objective, phase
    grid: Mapping[str, Any]
    skipped: int
    created_utc: str
    protocol: str = PROTOCOL_VERSION
    tie_break: str = TIE_BREAK
    # fields later tuning steps add (abstention, abstention_report, joint_candidates,
    # usefulness, usefulness_report), as they wrote them
    added: Mapping[str, Any] = field(default_factory=dict)

    @property
    def abstention_report(self) -> Mapping[str, Any] | None:
        """The abstention model's report, when the joint choice ran."""
        report: Mapping[str, Any] | None = self.added.get("abstention_report")
        return report

    def with_fields(self, fields: Mapping[str, Any]) -> Selection:
        """A copy with top-level fields set as selection.json names them (a `config` or
        `objective` replaces the tuned one)."""
        return Selection.from_json({**self.to_json(), **fields})

    def to_json(self) -> dict[str, Any]:
        return {
            "protocol": self.protocol,
            "config": dict(self.config),
            "objective": self.objective,
            "benchmark": dict(self.benchmark),
            "tie_break": self.tie_break,
            "curve": [dict(point) for point in self.curve],
            "grid": dict(self.grid),
            "skipped_all_zero_routes": self.skipped,
            "created_utc": self.created_utc,
            **self.added,
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Selection:
        """A selection.json's content; fields written before this record (grid, counts, dates)
        read as empty when absent."""
        for key in _REQUIRED:
            if key not in data:
                raise TuningError(f"selection: field {key!r} missing")
        return Selection(
            config=dict(data["config"]),
            objective=data["objective"],
            benchmark=dict(data["benchmark"]),
            curve=tuple(data["curve"]),
            grid=dict(data.get("grid", {})),
            skipped=data.get("skipped_all_zero_routes", 0),
            created_utc=data.get("created_utc", ""),
            protocol=data.get("protocol", PROTOCOL_VERSION),
            tie_break=data.get("tie_break", TIE_BREAK),
            added={k: v for k, v in data.items() if k not in _FIELDS},
        )


_REQUIRED = ("config", "objective", "benchmark", "curve")
_FIELDS = (
    *_REQUIRED,
    "grid",
    "skipped_all_zero_routes",
    "created_utc",
    "protocol",
    "tie_break",
)


def tune(
    benchmark_dir: Path,
    evaluate: Callable[[Config], float],
    grid: Mapping[str, Any],
    *,
    out: Path | None = None,
    overwrite: bool = False,
) -> Selection:
    """Grid search + refinement of `evaluate` on a dev benchmark; write `out` if given.

    grid = {"axes": {key: [values]}, "defaults": {key: value}, "refine_points": int,
            "refine_rounds": int, "tie_tolerance": float}
    """
    meta = read_benchmark_meta(benchmark_dir)
    check_tuning_allowed(meta)
    axes, defaults, refine_points, refine_rounds, tolerance = _check_grid(grid)
    if out is not None and out.exists() and not overwrite:
        raise TuningError(f"{out}: selection exists; refusing to overwrite a frozen selection")
    checksum = benchmark_checksum(benchmark_dir)

    spans = {name: (max(values) - min(values)) or 1.0 for name, values in axes.items()}
    curve: list[dict[str, Any]] = []
    seen: dict[str, float] = {}
    skipped = 0

    def run(config: Config, phase: str) -> None:
        nonlocal skipped
        key = _canonical(config)
        if key in seen:
            return
        if not any(config[name] > 0 for name in config if name.startswith(ROUTE_PREFIX)):
            skipped += 1
            seen[key] = -math.inf
            return
        value = evaluate(dict(config))
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise TuningError(f"evaluate({key}) returned {value!r}; expected a finite number")
        seen[key] = float(value)
        curve.append({"config": dict(config), "objective": float(value), "phase": phase})

    names = sorted(axes)
    for combo in itertools.product(*(axes[name] for name in names)):
        run(dict(zip(names, combo, strict=True)), "grid")
    best = _best(curve, defaults, spans, tolerance)
    for round_number in range(1, refine_rounds + 1):
        for name in names:
            tried = sorted({point["config"][name] for point in curve} | set(axes[name]))
            for value in _between(tried, best[name], refine_points, _is_integer_axis(axes[name])):
                run({**best, name: value}, f"refine-{round_number}")
            best = _best(curve, defaults, spans, tolerance)

    winner = next(p for p in curve if _canonical(p["config"]) == _canonical(best))
    selection = Selection(
        config=best,
        objective=winner["objective"],
        benchmark={
            "dir": str(benchmark_dir),
            "name": meta["name"],
            "version": meta["version"],
            "partition": meta["partition"],
            "corpus": meta.get("corpus"),
            "judgement_set": meta.get("judgement_set"),
            "checksum": checksum,
        },
        curve=tuple(curve),
        grid=copy.deepcopy(dict(grid)),
        skipped=skipped,
        created_utc=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    if out is not None:
        write_selection(selection, out)
    return selection


def simplicity_key(
    config: Mapping[str, Value], defaults: Mapping[str, Value], spans: Mapping[str, float]
) -> tuple[int, int, float, str]:
    """Sort key, smaller = simpler (rules a-d in the module docstring)."""
    active = sum(1 for name, value in config.items() if name.startswith(ROUTE_PREFIX) and value > 0)
    differing = sum(1 for name, value in config.items() if value != defaults[name])
    distance = sum(abs(value - defaults[name]) / spans[name] for name, value in config.items())
    return (active, differing, round(distance, 12), _canonical(config))


def search_params(base: Mapping[str, Any], config: Mapping[str, Value]) -> dict[str, Any]:
    """A copy of the `search` params block with each dotted config key set."""
    try:
        return set_search_keys(base, config)
    except MamboMemeError as exc:
        raise TuningError(str(exc)) from None


def write_selection(selection: Selection, path: Path) -> None:
    """Write selection.json (temp file + rename, so a reader never sees half of it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(selection.to_json(), indent=2, sort_keys=True) + "\n", "utf-8")
    tmp.replace(path)


def add_to_selection(path: Path, fields: Mapping[str, Any]) -> Selection:
    """Add top-level fields (e.g. the abstention model tuned for the selected config) to a
    selection.json the same stage just wrote (temp file + rename); return the result."""
    selection = load_selection(path).with_fields(fields)
    write_selection(selection, path)
    return selection


def load_selection(path: Path) -> Selection:
    """selection.json; a missing file or missing field is a clear error."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TuningError(
            f"{path}: no selection; run the tune stage on the dev benchmark"
        ) from None
    except ValueError as exc:
        raise TuningError(f"{path}: not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise TuningError(f"{path}: must be a JSON object")
    for key in _REQUIRED:
        if key not in data:
            raise TuningError(f"{path}: field {key!r} missing")
    return Selection.from_json(data)


def _check_grid(
    grid: Mapping[str, Any],
) -> tuple[dict[str, list[Value]], dict[str, Value], int, int, float]:
    axes_raw = grid.get("axes")
    if not isinstance(axes_raw, Mapping) or not axes_raw:
        raise TuningError("grid: field 'axes' must be a non-empty mapping")
    axes: dict[str, list[Value]] = {}
    for name, values in axes_raw.items():
        if not isinstance(values, Sequence) or isinstance(values, str) or not values:
            raise TuningError(f"grid.axes.{name}: must be a non-empty list of numbers")
        for value in values:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise TuningError(f"grid.axes.{name}: {value!r} is not a number")
            if not math.isfinite(value) or value < 0:
                raise TuningError(f"grid.axes.{name}: {value!r} must be finite and >= 0")
        axes[str(name)] = sorted(set(values))
    for route in (f"{ROUTE_PREFIX}lexical", f"{ROUTE_PREFIX}dense"):
        if route not in axes:
            raise TuningError(f"grid.axes: axis {route!r} is required")
    for name, values in axes.items():
        if name.startswith(ROUTE_PREFIX) and 0 not in values:
            raise TuningError(f"grid.axes.{name}: must include 0 so single-route systems compete")
        if name.startswith(ROUTE_PREFIX) and max(values) <= 0:
            raise TuningError(f"grid.axes.{name}: needs a value > 0")
    size = math.prod(len(v) for v in axes.values())
    if size > MAX_GRID_POINTS:
        raise TuningError(f"grid: {size} points exceeds the limit of {MAX_GRID_POINTS}")
    defaults_raw = grid.get("defaults")
    if not isinstance(defaults_raw, Mapping):
        raise TuningError("grid: field 'defaults' must map every axis to its default value")
    defaults: dict[str, Value] = {}
    for name in axes:
        if name not in defaults_raw:
            raise TuningError(f"grid.defaults: missing a default for axis {name!r}")
        defaults[name] = defaults_raw[name]
    points = _non_negative_int(grid, "refine_points", TuningParams.refine_points)
    rounds = _non_negative_int(grid, "refine_rounds", TuningParams.refine_rounds)
    tolerance = grid.get("tie_tolerance", TuningParams.tie_tolerance)
    if isinstance(tolerance, bool) or not isinstance(tolerance, int | float) or tolerance < 0:
        raise TuningError(f"grid.tie_tolerance: {tolerance!r} must be a number >= 0")
    return axes, defaults, points, rounds, float(tolerance)


def _non_negative_int(grid: Mapping[str, Any], key: str, default: int) -> int:
    value = grid.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TuningError(f"grid.{key}: {value!r} must be an integer >= 0")
    return value


def _best(
    curve: Sequence[Mapping[str, Any]],
    defaults: Mapping[str, Value],
    spans: Mapping[str, float],
    tolerance: float,
) -> Config:
    if not curve:
        raise TuningError("grid: no point with an active route was evaluated")
    top = max(point["objective"] for point in curve)
    tied: list[Config] = [
        dict(point["config"]) for point in curve if point["objective"] >= top - tolerance
    ]
    return min(tied, key=lambda c: simplicity_key(c, defaults, spans))


def _between(tried: Sequence[Value], best: Value, points: int, integer: bool) -> list[Value]:
    """`points` evenly spaced values strictly between `best` and each neighbour in `tried`."""
    lower = [v for v in tried if v < best]
    upper = [v for v in tried if v > best]
    found: list[Value] = []
    for neighbour in ([max(lower)] if lower else []) + ([min(upper)] if upper else []):
        for i in range(1, points + 1):
            raw = best + (neighbour - best) * i / (points + 1)
            value: Value = int(round(raw)) if integer else round(raw, 6)
            if value not in tried and value not in found and value != best:
                found.append(value)
    return sorted(found)


def _is_integer_axis(values: Sequence[Value]) -> bool:
    return all(isinstance(v, int) for v in values)


def _canonical(config: Mapping[str, Value]) -> str:
    return json.dumps(dict(config), sort_keys=True)
