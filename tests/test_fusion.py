from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mambomeme.search.fusion import RankedList, fused_order, weighted_rrf


def test_weighted_rrf_matches_the_spec_formula() -> None:
    lists = [
        RankedList(0, "lexical", 1.0, [3, 1]),
        RankedList(0, "dense", 0.5, [1, 2]),
    ]
    fused = weighted_rrf(lists, k=60)
    total = 1.0 + 0.5
    assert fused[3] == pytest.approx((1.0 / (60 + 1)) / total)
    assert fused[1] == pytest.approx((1.0 / (60 + 2) + 0.5 / (60 + 1)) / total)
    assert fused[2] == pytest.approx((0.5 / (60 + 2)) / total)


def test_inactive_routes_with_zero_weight_give_nothing() -> None:
    assert weighted_rrf([RankedList(0, "dense", 0.0, [1])], k=60) == {}
    assert weighted_rrf([], k=60) == {}


def test_ties_broken_by_item_id() -> None:
    ids = ["b", "a", "c"]
    assert fused_order({0: 0.5, 1: 0.5, 2: 0.7}, ids) == [2, 1, 0]


@given(
    st.lists(st.lists(st.integers(0, 20), unique=True, max_size=8), min_size=1, max_size=5),
    st.randoms(),
)
def test_fusion_is_order_independent(rows: list[list[int]], rnd: random.Random) -> None:
    lists = [RankedList(i, "lexical", 1.0 + i, r) for i, r in enumerate(rows)]
    shuffled = lists[:]
    rnd.shuffle(shuffled)
    a, b = weighted_rrf(lists, 60), weighted_rrf(shuffled, 60)
    assert a.keys() == b.keys()
    for key in a:
        assert a[key] == pytest.approx(b[key])
