"""Inter-annotator agreement between two graders, per slice and overall.

* Quadratic-weighted Cohen's kappa over grades 0..3 (Cohen 1968):
      w_ij = (i - j)^2 / (K - 1)^2,   kappa = 1 - sum(w * O) / sum(w * E)
  where O is the observed K x K confusion matrix and E = outer(row sums, column sums) / n.
  Undefined (None) when sum(w * E) = 0, i.e. both graders used a single identical grade.
* Krippendorff's alpha, ordinal level, value domain [0, 1, 2, 3] (the `krippendorff` package
  defaults to interval, so the level is always passed). None when fewer than 2 distinct values.
* Exact agreement: share of pairs with identical grades; and safety agreement, share of items
  with the same safety class.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mambomeme.evaluation.annotations import GRADES, Label

Key = tuple[str, str]


def quadratic_kappa(a: Sequence[int], b: Sequence[int], k: int = len(GRADES)) -> float | None:
    if len(a) != len(b):
        raise ValueError("both graders must grade the same pairs")
    if not a:
        return None
    observed = np.zeros((k, k))
    for x, y in zip(a, b, strict=True):
        observed[x, y] += 1
    n = observed.sum()
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / n
    i, j = np.indices((k, k))
    weights = (i - j) ** 2 / (k - 1) ** 2
    denominator = float((weights * expected).sum())
    if denominator == 0.0:
        return None
    return 1.0 - float((weights * observed).sum()) / denominator


def ordinal_alpha(a: Sequence[int], b: Sequence[int]) -> float | None:
    import krippendorff

    if len(set(a) | set(b)) < 2:
        return None
    data = np.array([list(a), list(b)], dtype=float)
    return float(
        krippendorff.alpha(
            reliability_data=data, level_of_measurement="ordinal", value_domain=list(GRADES)
        )
    )


def exact_agreement(a: Sequence[int], b: Sequence[int]) -> float | None:
    return sum(x == y for x, y in zip(a, b, strict=True)) / len(a) if a else None


def within_one(a: Sequence[int], b: Sequence[int]) -> float | None:
    """Share of pairs whose two grades differ by at most one."""
    return sum(abs(x - y) <= 1 for x, y in zip(a, b, strict=True)) / len(a) if a else None


def _block(a: Sequence[int], b: Sequence[int]) -> dict[str, Any]:
    return {
        "pairs": len(a),
        "kappa_quadratic": quadratic_kappa(a, b),
        "alpha_ordinal": ordinal_alpha(a, b),
        "exact": exact_agreement(a, b),
        "within_one": within_one(a, b),
    }


def agreement(
    first: Mapping[Key, Label], second: Mapping[Key, Label], slice_of: Mapping[str, str]
) -> dict[str, Any]:
    """Agreement overall and per slice of the pairs both annotators graded (the same set)."""
    if set(first) != set(second):
        only = sorted(set(first) ^ set(second))[:3]
        raise ValueError(f"the two annotators graded different pairs, e.g. {only}")
    keys = sorted(first)
    report: dict[str, Any] = {
        "overall": _block([first[k].grade for k in keys], [second[k].grade for k in keys])
    }
    slices: dict[str, Any] = {}
    for name in sorted({slice_of[k[0]] for k in keys}):
        chosen = [k for k in keys if slice_of[k[0]] == name]
        slices[name] = _block([first[k].grade for k in chosen], [second[k].grade for k in chosen])
    report["slices"] = slices
    items = sorted({k[1] for k in keys})
    safety_a = {k[1]: first[k].safety for k in keys}
    safety_b = {k[1]: second[k].safety for k in keys}
    same = sum(safety_a[i] == safety_b[i] for i in items)
    report["safety"] = {
        "items": len(items),
        "exact": same / len(items) if items else None,
        "unsafe_a": sum(v == "unsafe" for v in safety_a.values()),
        "unsafe_b": sum(v == "unsafe" for v in safety_b.values()),
    }
    return report
