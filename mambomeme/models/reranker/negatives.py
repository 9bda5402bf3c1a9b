"""Hard negatives for the knowledge pairs: other families' items the dense route ranks high.

A random item of another family is an easy negative: it rarely shares a topic with the query.
The reranker is served on the fused top 30, where every candidate is on topic, so it must
learn the finer difference. For each knowledge query (data.py) the dense index of the
build ranks the eligible items of the allowed families by cosine to the query (the same
all-MiniLM-L6-v2 embedding the dense route serves); `count` items of other families are drawn
(seeded) from the first `depth` of them, label 0, source "knowledge". Judgement pairs have
their own reviewed hard negatives and are left as they are.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from mambomeme.corpus.schema import Item
from mambomeme.errors import MamboMemeError
from mambomeme.evaluation.pooling import item_family
from mambomeme.index.dense import DenseFiles, Encoder
from mambomeme.index.dense_index import DenseIndex
from mambomeme.models.reranker.data import Pair, left_out
from mambomeme.models.reranker.features import item_text


class Neighbours:
    """The build's verified dense matrix and the query encoder: `nearest(texts, depth)` ranks
    the eligible items of the allowed families by cosine to each text."""

    def __init__(self, build: Path, items: Mapping[str, Item], allowed: frozenset[str]) -> None:
        """`items` in the corpus's order (an ItemTable), which the dense index must match."""
        self.ids = list(items)
        self.index = DenseIndex(DenseFiles.in_dir(Path(build) / "dense"), self.ids)
        self.mask = np.array(
            [
                items[i].eligible and item_family(items[i].template_group) in allowed
                for i in self.ids
            ],
            dtype=bool,
        )
        self.encoder = Encoder()

    def nearest(self, texts: Sequence[str], depth: int) -> list[list[str]]:
        vectors = self.encoder.encode(list(texts))
        return [
            [self.ids[row] for row, _ in self.index.search(vector, self.mask, depth)]
            for vector in vectors
        ]


def hard_negative_pairs(
    pairs: Sequence[Pair],
    items: Mapping[str, Item],
    neighbours: Neighbours,
    count: int,
    depth: int,
    seed: int,
) -> list[Pair]:
    """`count` hard negatives for every knowledge query of `pairs` (see the module docstring);
    the item text leaves out what that query's own pairs leave out (its source field)."""
    if count <= 0:
        return []
    if depth < count:
        raise MamboMemeError(
            f"params rerank.hard_depth ({depth}) is below hard_negatives ({count})"
        )
    queries: dict[str, Pair] = {}
    taken: dict[str, set[str]] = {}
    for p in pairs:
        if p.source == "knowledge":
            queries.setdefault(p.qid, p)
            taken.setdefault(p.qid, set()).add(p.item_id)
    qids = sorted(queries)
    found = neighbours.nearest([queries[q].query for q in qids], depth)
    rng = random.Random(seed)
    out: list[Pair] = []
    for qid, ranked in zip(qids, found, strict=True):
        first = queries[qid]
        without = left_out(first)
        options = [
            i
            for i in ranked
            if i not in taken[qid] and item_family(items[i].template_group) != first.family
        ]
        for item_id in sorted(rng.sample(options, min(count, len(options)))):
            item = items[item_id]
            out.append(
                Pair(
                    qid,
                    first.family,
                    item_id,
                    item_family(item.template_group),
                    first.query,
                    item_text(item, without),
                    0.0,
                    "knowledge",
                )
            )
    return out
