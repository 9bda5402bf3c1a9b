"""Serving side of the per-item usefulness model: P(grade >= 2) for each candidate of a request.

The model is a gradient-boosted tree ensemble (scikit-learn's HistGradientBoostingClassifier,
trained by models/usefulness/train.py) carried as plain JSON inside the frozen selection: per
tree its nodes (feature, threshold, left, right, leaf value), plus the baseline. So serving needs
NumPy only, the release's selection fingerprint covers the model, and nothing is unpickled.

    P(useful | x) = sigmoid(baseline + sum over trees of leaf_t(x))
    leaf_t(x): from the root, go left while x[feature] <= threshold, else right, to a leaf

A second ensemble may order the list: a LightGBM LambdaMART ranker (`order: ranker`, its raw
score is the sum of its trees' leaves), chosen in training against P(useful) and the fused
order. The mapping records its version, feature version, feature names and the sha256 of its trees;
`from_mapping` refuses any mismatch (a selection from other code, or an edited model). The
list rules that use P (order, item threshold, empty threshold) are documented in
search/usefulness.py.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mambomeme.errors import MamboMemeError
from mambomeme.models.usefulness.features import FEATURE_VERSION, FEATURES

MODEL_VERSION = "usefulness-gbt-1"
TREE_KEYS = ("feature", "threshold", "left", "right", "value", "leaf")


@dataclass(frozen=True)
class Forest:
    """Every tree's nodes in one array set; tree t's root is node `roots[t]`."""

    roots: np.ndarray  # int, per tree
    feature: np.ndarray  # int, per node
    threshold: np.ndarray  # float, per node: go left when x[feature] <= threshold
    left: np.ndarray  # int, per node (global index)
    right: np.ndarray  # int, per node (global index)
    value: np.ndarray  # float, per node (read at leaves)
    leaf: np.ndarray  # bool, per node

    def predict(self, x: np.ndarray) -> np.ndarray:
        """The sum over trees of each row's leaf value. Every (row, tree) walk goes one level
        per step, all together, and only the walks still at an inner node move (a tree of
        depth d needs d steps); the leaves are summed per row in tree order."""
        n, trees = len(x), len(self.roots)
        node = np.tile(self.roots, n)  # walk i: row i // trees, tree i % trees
        offset = np.repeat(np.arange(n) * x.shape[1], trees)  # row start in x, flattened
        values = np.ascontiguousarray(x).ravel()
        walking = np.flatnonzero(~self.leaf[node])
        while walking.size:
            at = node[walking]
            go_left = values[offset[walking] + self.feature[at]] <= self.threshold[at]
            step = np.where(go_left, self.left[at], self.right[at])
            node[walking] = step
            walking = walking[~self.leaf[step]]
        return np.asarray(self.value[node.reshape(n, trees)].sum(axis=1), dtype=np.float64)


def forest(raw_trees: Sequence[Mapping[str, Any]]) -> Forest:
    """The trees' node arrays concatenated, child indices made global."""
    roots, parts = [], {k: [] for k in TREE_KEYS}  # type: ignore[var-annotated]
    offset = 0
    for number, tree in enumerate(raw_trees):
        if not isinstance(tree, Mapping) or any(k not in tree for k in TREE_KEYS):
            raise MamboMemeError(f"usefulness model: tree {number} needs {TREE_KEYS}")
        sizes = {len(tree[k]) for k in TREE_KEYS}
        if len(sizes) != 1 or not sizes.pop():
            raise MamboMemeError(f"usefulness model: tree {number} has ragged or no nodes")
        n = len(tree["leaf"])
        leaf = np.asarray(tree["leaf"], dtype=bool)
        feature = np.asarray(tree["feature"], dtype=np.int64)
        left = np.asarray(tree["left"], dtype=np.int64)
        right = np.asarray(tree["right"], dtype=np.int64)
        inner = ~leaf
        if inner.any() and (
            feature[inner].min() < 0
            or feature[inner].max() >= len(FEATURES)
            or min(left[inner].min(), right[inner].min()) < 0
            or max(left[inner].max(), right[inner].max()) >= n
        ):
            raise MamboMemeError(f"usefulness model: tree {number} has an invalid node")
        roots.append(offset)
        parts["feature"].append(np.where(inner, feature, 0))
        parts["threshold"].append(np.asarray(tree["threshold"], dtype=np.float64))
        parts["left"].append(np.where(inner, left + offset, 0))
        parts["right"].append(np.where(inner, right + offset, 0))
        parts["value"].append(np.asarray(tree["value"], dtype=np.float64))
        parts["leaf"].append(leaf)
        offset += n
    joined = {k: np.concatenate(v) for k, v in parts.items()}
    return Forest(
        np.asarray(roots, dtype=np.int64),
        joined["feature"],
        joined["threshold"],
        joined["left"],
        joined["right"],
        joined["value"],
        joined["leaf"],
    )


def trees_sha256(trees: Sequence[Mapping[str, Any]], baseline: float) -> str:
    canonical = json.dumps({"baseline": baseline, "trees": list(trees)}, sort_keys=True)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


ORDERS = ("fused", "useful", "ranker")  # what orders a list: see `order_scores`


@dataclass(frozen=True)
class UsefulnessModel:
    baseline: float
    trees: Forest
    item_threshold: float  # shown items need P >= this (exact matches aside)
    empty_threshold: float  # an empty list when the best P is below this (and nothing exact)
    pool: int  # fused candidates the model scores per request
    order: str = "useful"  # ORDERS: the fused order, P(useful), or the learned ranker's score
    ranker: Forest | None = None  # the LambdaMART ranker's trees when order is "ranker"

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> UsefulnessModel:
        """The model a selection carries; a mismatched or edited one is refused."""
        if raw.get("version") != MODEL_VERSION or raw.get("feature_version") != FEATURE_VERSION:
            raise MamboMemeError(
                f"usefulness model {raw.get('version')!r}/{raw.get('feature_version')!r}; this "
                f"engine reads {MODEL_VERSION}/{FEATURE_VERSION}: re-run the tune stage"
            )
        if tuple(raw.get("features", ())) != FEATURES:
            raise MamboMemeError("usefulness model: trained on other features; re-run tune")
        raw_trees = raw.get("trees")
        if not isinstance(raw_trees, list) or not raw_trees:
            raise MamboMemeError("usefulness model: field 'trees' must be a non-empty list")
        baseline = float(raw["baseline"])
        if trees_sha256(raw_trees, baseline) != raw.get("sha256"):
            raise MamboMemeError("usefulness model: trees do not match their sha256 (edited?)")
        order = str(raw.get("order", "useful"))
        if order not in ORDERS:
            raise MamboMemeError(f"usefulness model: order {order!r}; known: {ORDERS}")
        ranker = None
        if order == "ranker":
            raw_ranker = raw.get("ranker_trees")
            if not isinstance(raw_ranker, list) or not raw_ranker:
                raise MamboMemeError("usefulness model: order 'ranker' needs 'ranker_trees'")
            if trees_sha256(raw_ranker, 0.0) != raw.get("ranker_sha256"):
                raise MamboMemeError("usefulness model: ranker trees do not match their sha256")
            ranker = forest(raw_ranker)
        return cls(
            baseline,
            forest(raw_trees),
            float(raw["item_threshold"]),
            float(raw["empty_threshold"]),
            int(raw["pool"]),
            order,
            ranker,
        )

    def probability(self, x: np.ndarray) -> np.ndarray:
        """P(grade >= 2) per row of `x` (columns in FEATURES order)."""
        if x.ndim != 2 or x.shape[1] != len(FEATURES):
            raise MamboMemeError(f"usefulness model: expected (n, {len(FEATURES)}) features")
        raw = self.baseline + self.trees.predict(np.asarray(x, dtype=np.float64))
        return np.asarray(1.0 / (1.0 + np.exp(-raw)), dtype=np.float64)

    def order_scores(self, x: np.ndarray, probability: np.ndarray) -> np.ndarray:
        """What orders the list, higher first: the ranker's score, P(useful), or (fused) minus
        the fused position, so the fused order is kept."""
        if self.order == "ranker" and self.ranker is not None:
            return self.ranker.predict(np.asarray(x, dtype=np.float64))
        if self.order == "fused":
            return -np.arange(len(x), dtype=np.float64)
        return probability
