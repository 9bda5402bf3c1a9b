"""Plot data (CSV/JSON for `dvc plots`) and PNG charts from a scorecard (scorecard_types.py).

Data files are wide, one column per system, so a dvc.yaml plot can name its y columns:
    slice_ndcg.csv  slice,<system>,...       nDCG@10 of every primary slice (empty = no queries)
    latency.csv     percentile,<system>,...  nearest-rank latency percentiles 1..100 in ms
matplotlib is imported inside the PNG functions, with the Agg backend (no display needed).
Every system keeps one distinct colour in both charts (`system_colours`), and the legend sits
to the right of the axes, outside the data.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from mambomeme.evaluation.benchmark import SLICES
from mambomeme.evaluation.scorecard_types import Scorecard


def slice_ndcg_rows(card: Scorecard) -> list[dict[str, Any]]:
    return [
        {"slice": name, **{row.system: row.slice_ndcg.get(name) for row in card.systems}}
        for name in SLICES
    ]


def percentile(sorted_values: Sequence[float], p: int) -> float:
    """Nearest-rank percentile p (1..100) of ascending values."""
    rank = max(1, math.ceil(p / 100 * len(sorted_values) - 1e-9))
    return sorted_values[rank - 1]


def latency_rows(card: Scorecard) -> list[dict[str, Any]]:
    values = {row.system: sorted(row.latency_ms) for row in card.systems}
    return [
        {"percentile": p, **{s: percentile(v, p) if v else None for s, v in values.items()}}
        for p in range(1, 101)
    ]


def csv_bytes(rows: Sequence[Mapping[str, Any]]) -> bytes:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if v is None else v for k, v in row.items()})
    return buffer.getvalue().encode("utf-8")


def json_bytes(rows: Sequence[Mapping[str, Any]]) -> bytes:
    return (json.dumps(list(rows), indent=2) + "\n").encode("utf-8")


def system_colours(systems: Sequence[str]) -> dict[str, Any]:
    """A distinct colour per system, in scorecard order: tab20 (paired hues reordered so
    neighbours differ) up to 20 systems, evenly spaced hues beyond."""
    from matplotlib import colormaps

    if len(systems) <= 20:
        palette = colormaps["tab20"]
        order = [*range(0, 20, 2), *range(1, 20, 2)]  # the 10 strong hues, then their pale pairs
        return {s: palette(order[i]) for i, s in enumerate(systems)}
    hues = colormaps["hsv"]
    return {s: hues(i / len(systems)) for i, s in enumerate(systems)}


def _legend_outside(axes: Any) -> None:
    axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)


def _figure_bytes(figure: Any) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    return buffer.getvalue()


def slice_ndcg_png(card: Scorecard) -> bytes:
    """Grouped bars: nDCG@10 per primary slice, one bar per system, 0.30 gate line."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    systems = [row.system for row in card.systems]
    colours = system_colours(systems)
    figure = Figure(figsize=(max(6.0, 1.2 * len(SLICES) + 0.3 * len(systems)), 4.0))
    axes = figure.subplots()
    width = 0.8 / max(1, len(systems))
    for index, row in enumerate(card.systems):
        heights = [row.slice_ndcg.get(s) or 0.0 for s in SLICES]
        positions = [i + (index - (len(systems) - 1) / 2) * width for i in range(len(SLICES))]
        axes.bar(positions, heights, width=width, label=row.system, color=colours[row.system])
    axes.axhline(0.30, color="black", linestyle="--", linewidth=1, label="gate 0.30")
    axes.set_xticks(range(len(SLICES)), SLICES)
    axes.set_ylim(0, 1)
    axes.set_ylabel("nDCG@10")
    axes.set_title("nDCG@10 by primary slice")
    _legend_outside(axes)
    return _figure_bytes(figure)


def latency_png(card: Scorecard) -> bytes:
    """Latency distribution: the empirical CDF of per-query search latency for each system."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.0, 4.0))
    axes = figure.subplots()
    colours = system_colours([row.system for row in card.systems])
    for row in card.systems:
        values = sorted(row.latency_ms)
        if values:
            axes.step(
                values,
                [(i + 1) / len(values) for i in range(len(values))],
                where="post",
                label=row.system,
                color=colours[row.system],
            )
    axes.axvline(200, color="green", linestyle=":", linewidth=1, label="L = 1 (200 ms)")
    axes.axvline(1000, color="red", linestyle=":", linewidth=1, label="L = 0 (1,000 ms)")
    if all(v > 0 for row in card.systems for v in row.latency_ms):
        axes.set_xscale("log")
    axes.set_xlabel("search latency (ms)")
    axes.set_ylabel("share of queries")
    axes.set_title("Per-query latency")
    _legend_outside(axes)
    return _figure_bytes(figure)
