"""The tools a user would pick instead of ours, set up to answer the same question.

Lexical peer: bm25s (BM25 over scipy sparse matrices). It has no fields, so it indexes what our
FTS5 table holds — every search field's normalised text — concatenated per item, tokenised by the
same tokenizer our query builder uses (`fts_query.tokenize_all`), and it is queried with the same
tokens our lexical route sends (`fts_query.tokenize`). Ineligible rows are removed with bm25s'
`weight_mask`, the same eligibility mask our route applies; bm25s pads short lists with
zero-score non-matches, which we drop, so both return only matching eligible rows.

Dense peers: sentence-transformers `util.semantic_search` (torch matmul + topk) and faiss
`IndexFlatIP` (exact inner product), over the same L2-normalised float32 matrix. Neither applies
an eligibility mask (our route does; that costs it a gather over the scores).

bm25s, faiss and torch are imported inside the functions that need them, so importing this module
is cheap and a missing peer is reported, not fatal.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mambomeme.corpus.normalise import normalise
from mambomeme.corpus.schema import SEARCH_FIELDS, Item
from mambomeme.index import fts_query


def item_tokens(item: Item) -> list[str]:
    """The tokens of every search field of `item`, in field order (what FTS5 indexes)."""
    tokens: list[str] = []
    for name in SEARCH_FIELDS:
        tokens.extend(fts_query.tokenize_all(normalise(item.field_text(name))))
    return tokens


class Bm25sPeer:
    """bm25s over the concatenated normalised search fields of every item (row = item order)."""

    def __init__(self, corpus_tokens: Sequence[list[str]]) -> None:
        import bm25s

        self._retriever = bm25s.BM25()
        # an empty document would be rejected by nothing but match nothing; keep rows aligned
        self._retriever.index([list(t) for t in corpus_tokens], show_progress=False)
        self._size = len(corpus_tokens)
        self._vocab: set[str] = set(self._retriever.vocab_dict)

    @classmethod
    def from_items(cls, items: Sequence[Item]) -> Bm25sPeer:
        return cls([item_tokens(item) for item in items])

    def search(
        self, tokens: Sequence[str], mask: np.ndarray, depth: int
    ) -> list[tuple[int, float]]:
        """Top `depth` eligible rows with a positive BM25 score, best first."""
        known = [t for t in tokens if t in self._vocab]
        if not known:
            return []
        docs, scores = self._retriever.retrieve(
            [known],
            k=min(depth, self._size),
            show_progress=False,
            n_threads=0,
            weight_mask=mask.astype(np.float32),
        )
        return [(int(d), float(s)) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]


class SemanticSearchPeer:
    """sentence-transformers util.semantic_search over the matrix as a torch tensor."""

    def __init__(self, matrix: np.ndarray) -> None:
        import torch

        self._torch = torch
        self._corpus = torch.from_numpy(np.array(matrix))  # a writable copy (the index is mapped)

    def search(self, query: np.ndarray, depth: int) -> list[tuple[int, float]]:
        from sentence_transformers import util

        hits = util.semantic_search(
            self._torch.from_numpy(query[None, :]), self._corpus, top_k=depth
        )[0]
        return [(int(h["corpus_id"]), float(h["score"])) for h in hits]


class FaissFlatPeer:
    """faiss IndexFlatIP: exact inner product, which is cosine on L2-normalised rows."""

    def __init__(self, matrix: np.ndarray) -> None:
        import faiss

        self._index: Any = faiss.IndexFlatIP(matrix.shape[1])
        self._index.add(np.ascontiguousarray(matrix, dtype=np.float32))

    def search(self, query: np.ndarray, depth: int) -> list[tuple[int, float]]:
        scores, rows = self._index.search(query[None, :].astype(np.float32), depth)
        return [(int(r), float(s)) for r, s in zip(rows[0], scores[0], strict=True) if r >= 0]


def synthetic_matrix(rows: int, dim: int, seed: int) -> np.ndarray:
    """A random L2-normalised float32 matrix (for timing only: its neighbours mean nothing)."""
    rng = np.random.default_rng(seed)
    matrix = rng.standard_normal((rows, dim), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix
