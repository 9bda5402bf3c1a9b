"""Weighted reciprocal-rank fusion, exactly as the retrieval spec (seeds/002) defines it:

    RRF(item) = sum(cue_weight * route_weight / (k + route_rank))
                / sum(cue_weight * route_weight for active routes)

summed over every (cue, route) list that ranked the item; the denominator sums over every
(cue, route) list that was active in the request, whether or not it ranked the item.
Cormack, Clarke & Buettcher (SIGIR 2009) introduced RRF with k = 60.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple


class RankedList(NamedTuple):
    cue: int
    route: str
    weight: float  # cue_weight * route_weight
    rows: Sequence[int]  # best first; rank of rows[i] is i + 1


def weighted_rrf(lists: Sequence[RankedList], k: float) -> dict[int, float]:
    """Fused score per row; empty when no list is active or the total weight is zero."""
    total = sum(lst.weight for lst in lists)
    if total <= 0:
        return {}
    fused: dict[int, float] = {}
    for lst in lists:
        for position, row in enumerate(lst.rows):
            fused[row] = fused.get(row, 0.0) + lst.weight / (k + position + 1)
    return {row: score / total for row, score in fused.items()}


def fused_order(scores: Mapping[int, float], ids: Sequence[str]) -> list[int]:
    """Rows by fused score descending, then item id ascending (deterministic ties)."""
    return sorted(scores, key=lambda row: (-scores[row], ids[row]))
