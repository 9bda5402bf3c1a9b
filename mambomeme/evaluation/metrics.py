"""Per-query ranked-retrieval metrics over one ordered result list (seeds/000, "Retrieval metrics").

Every function takes `ranking`, the item ids in rank order (rank 1 first), and looks at the first
`k` (10 unless said). Unjudged items count as grade 0. Formulas follow trec_eval as exposed by
ir_measures, so `tests/test_eval_irmeasures.py` can check them to 1e-9:

    nDCG@10   = DCG@10 / ideal DCG@10, DCG@10 = sum_i (2^grade_i - 1) / log2(i + 1)
                (ir_measures `nDCG(gains={0:0,1:1,2:3,3:7})@10`); 0 when the ideal DCG is 0
    RR@10     = 1 / rank of the first grade >= 2 item in the top 10, else 0 (`RR(rel=2)@10`)
    Hit@k     = 1 if any grade >= 2 item is in the top k, else 0 (`Success(rel=2)@k`)
    Recall@10 = |grade >= 2 items in the top 10| / |grade >= 2 items judged|, 0 if none judged
                (`R(rel=2)@10`)
    ExactRR   = 1 / rank of the first item of any exact-target group in the top 10, else 0
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

RELEVANT = 2
CUTOFF = 10


def gain(grade: int) -> float:
    """Exponential gain 2^grade - 1 (grades 0..3 give 0, 1, 3, 7)."""
    return float(2**grade - 1)


def dcg(grades: Iterable[int]) -> float:
    """sum_i gain(grade_i) / log2(i + 1) over ranks i = 1, 2, ..."""
    return sum(gain(g) / math.log2(i + 1) for i, g in enumerate(grades, start=1))


def ndcg(ranking: Sequence[str], qrels: Mapping[str, int], k: int = CUTOFF) -> float:
    """nDCG@k with gain 2^rel - 1 and log2(i + 1) discount; 0 when the ideal DCG is 0."""
    ideal = dcg(sorted((g for g in qrels.values() if g > 0), reverse=True)[:k])
    if ideal == 0:
        return 0.0
    return dcg(qrels.get(item, 0) for item in ranking[:k]) / ideal


def reciprocal_rank(ranking: Sequence[str], qrels: Mapping[str, int], k: int = CUTOFF) -> float:
    """1 / rank of the first item with grade >= 2 within the top k, else 0."""
    for rank, item in enumerate(ranking[:k], start=1):
        if qrels.get(item, 0) >= RELEVANT:
            return 1.0 / rank
    return 0.0


def hit(ranking: Sequence[str], qrels: Mapping[str, int], k: int) -> float:
    """1.0 if any of the top k items has grade >= 2, else 0.0."""
    return 1.0 if any(qrels.get(item, 0) >= RELEVANT for item in ranking[:k]) else 0.0


def recall(ranking: Sequence[str], qrels: Mapping[str, int], k: int = CUTOFF) -> float:
    """Share of the grade >= 2 items that appear in the top k; 0 when there are none."""
    relevant = {item for item, g in qrels.items() if g >= RELEVANT}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranking[:k])) / len(relevant)


def exact_rr(ranking: Sequence[str], groups: Sequence[Sequence[str]], k: int = CUTOFF) -> float:
    """1 / rank of the first item that belongs to any exact-target group, else 0."""
    targets = {item for group in groups for item in group}
    for rank, item in enumerate(ranking[:k], start=1):
        if item in targets:
            return 1.0 / rank
    return 0.0


def safe_list(
    ranking: Sequence[str], judged: Mapping[str, str], fallback: Mapping[str, str]
) -> tuple[bool, int]:
    """(is the shown list safe, how many shown items were not in safety.tsv).

    A list is safe iff every shown item is "safe": the frozen label from safety.tsv when the
    item was judged, else the corpus item's own safety field (`fallback`). An item known to
    neither is treated as unsafe, as the policy says to do when unsure. An empty list is safe.
    """
    safe = True
    unjudged = 0
    for item in ranking:
        label = judged.get(item)
        if label is None:
            unjudged += 1
            label = fallback.get(item, "unsafe")
        if label != "safe":
            safe = False
    return safe, unjudged


def trec_order(scores: Mapping[str, float]) -> list[str]:
    """Item ids in the order trec_eval ranks a scored list: score descending, ties broken by
    item id descending. Our own run files never tie (runs.trec_score); foreign ones may."""
    return sorted(scores, key=lambda item: (scores[item], item), reverse=True)
