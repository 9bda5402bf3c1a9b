"""The engine's item table (search/items.py) agrees with the canonical items: every Item read
back whole, and the eligibility mask equal to the schema's own rule plus each request filter."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mambomeme.corpus.ingest import load_items
from mambomeme.corpus.normalise import normalise
from mambomeme.search.items import ItemTable
from mambomeme.search.results import Filters


def test_items_read_back_equal_the_canonical_items(fixture_build: Path) -> None:
    items = load_items(fixture_build)
    table = ItemTable(fixture_build)
    assert table.ids == [it.id for it in items]
    table.prefetch([5, 0, 5, len(items) - 1])  # a batch, unsorted, with a repeat
    assert [table.item(row) for row in range(len(items))] == items
    assert table[items[3].id] == items[3] and len(table) == len(items)


def test_mask_is_the_schema_rule_and_the_filters(fixture_build: Path) -> None:
    items = load_items(fixture_build)
    table = ItemTable(fixture_build)
    assert table.mask(None).tolist() == [it.eligible for it in items]
    assert 0 < sum(it.eligible for it in items) < len(items)  # both sides present
    templates = sorted({it.template for it in items if it.template})
    languages = sorted({it.language for it in items})
    cases = [Filters(kind="template"), Filters(kind="meme", language="en")]
    cases += [Filters(template=t.upper() + " ") for t in templates[:5]]  # case, spaces
    cases += [Filters(language=lang.split("-")[0].upper()) for lang in languages]
    for filters in cases:
        want = [
            it.eligible
            and filters.kind in (None, it.kind)
            and (
                filters.language is None
                or it.language.lower() == filters.language.lower()
                or it.language.lower().startswith(filters.language.lower() + "-")
            )
            and (
                filters.template is None
                or normalise(it.template).casefold() == normalise(filters.template).casefold()
            )
            for it in items
        ]
        got = table.mask(filters)
        assert got.dtype == np.bool_ and got.tolist() == want, filters
        assert any(want) or filters.template is not None, filters


def test_same_items_file_as_ingest() -> None:
    from mambomeme.corpus import ingest
    from mambomeme.search import items

    assert items.ITEMS_FILE == ingest.ITEMS_FILE
