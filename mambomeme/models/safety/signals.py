"""Extra per-item signals the safety model may use beside the MiniLM embedding, the rules and
the template prior (`safety_model.signals` in params.yaml names which; issue 33):

  - `template_risk`: the item's template's `risk.level` in knowledge/ (one-hot low, high; an
    item whose template has no entry gets zeros, like a `none` one). Written from each
    template's public name, meaning and typical use, so it exists for unseen families too.
  - `hatesonar`: the hate-speech and offensive-language probabilities of HateSonar's ONNX
    model (shipped inside the `hatesonar` package) over the item's words (title and caption).
  - `profanity`: alt-profanity-check's calibrated linear model (shipped inside the
    `alt-profanity-check` package) over the same words.

Each signal is a few float columns; `versions` records what computed them (package versions,
a checksum of the knowledge base's risk levels), so a model can refuse features computed
differently.
The packages are imported lazily: a model that names no such signal never needs them.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from mambomeme.corpus.knowledge import key as template_key
from mambomeme.corpus.knowledge import load_knowledge
from mambomeme.corpus.manifest import sha256_text
from mambomeme.corpus.schema import Item
from mambomeme.errors import MamboMemeError
from mambomeme.index.ray_map import ExecutorConfig, map_on_ray

COLUMNS: dict[str, tuple[str, ...]] = {
    "template_risk": ("template_risk_low", "template_risk_high"),
    "hatesonar": ("hatesonar_hate", "hatesonar_offensive"),
    "profanity": ("profanity",),
}
PACKAGES = {"hatesonar": "hatesonar", "profanity": "alt-profanity-check"}
BATCH = 1024  # texts per classifier call


class SignalError(MamboMemeError):
    """An unknown signal name, or a signal whose package or knowledge is missing."""


def check_names(names: Sequence[str]) -> tuple[str, ...]:
    unknown = [n for n in names if n not in COLUMNS]
    if unknown:
        raise SignalError(
            f"safety_model.signals: unknown signal {unknown[0]!r}; known: {', '.join(COLUMNS)}"
        )
    return tuple(names)


def words(item: Item) -> str:
    """The text the text classifiers read: the item's own words (title and caption)."""
    return f"{item.title}. {item.ocr_text}".strip()


def template_risk(knowledge_dir: Path) -> dict[str, str]:
    """Normalised template name -> risk level, from the knowledge base."""
    return {k: e.risk_level for k, e in load_knowledge(knowledge_dir).items()}


def versions(names: Sequence[str], knowledge_dir: Path | None) -> dict[str, str]:
    """What computed each named signal: the package version, or the knowledge checksum."""
    out: dict[str, str] = {}
    for name in check_names(names):
        if name == "template_risk":
            if knowledge_dir is None:
                raise SignalError("signal template_risk needs the knowledge folder")
            levels = sorted(template_risk(knowledge_dir).items())
            listing = "".join(f"{k}\t{v}\n" for k, v in levels)
            out[name] = f"knowledge risk levels sha256 {sha256_text(listing)}"
        else:
            try:
                out[name] = f"{PACKAGES[name]} {metadata.version(PACKAGES[name])}"
            except metadata.PackageNotFoundError:
                raise SignalError(
                    f"signal {name!r} needs the package {PACKAGES[name]!r} (pip install it)"
                ) from None
    return out


def matrix(
    names: Sequence[str], items: Sequence[Item], risk: Mapping[str, str] | None = None
) -> np.ndarray:
    """len(items) x (columns of the named signals), in the order of `names`."""
    blocks = [np.zeros((len(items), 0))]
    for name in check_names(names):
        if name == "template_risk":
            if risk is None:
                raise SignalError("signal template_risk needs the knowledge base's risk levels")
            blocks.append(_risk_columns(items, risk))
        elif name == "hatesonar":
            blocks.append(_hatesonar([words(it) for it in items]))
        else:
            blocks.append(_profanity([words(it) for it in items]))
    return np.hstack(blocks).astype(np.float64)


def matrix_on_ray(
    names: Sequence[str],
    items: Sequence[Item],
    risk: Mapping[str, str] | None,
    executor: ExecutorConfig,
) -> np.ndarray:
    """`matrix` computed by Ray actors that open the signal models once: one record per slice
    of BATCH items in input order, the very batches `matrix` gives the classifiers here, so
    the columns are the in-process ones bit for bit (index/ray_map.py)."""
    chunks = [list(items[start : start + BATCH]) for start in range(0, len(items), BATCH)]
    opener = functools.partial(_OpenedSignals.open, tuple(check_names(names)), risk)
    parts = map_on_ray(chunks, opener, _OpenedSignals.matrix, executor, "safety signal batches")
    width = len(column_names(names))
    return np.vstack(parts) if parts else np.zeros((0, width))


@dataclasses.dataclass(frozen=True)
class _OpenedSignals:
    """What a Ray actor holds: the signal names, the risk levels; the classifiers loaded."""

    names: tuple[str, ...]
    risk: Mapping[str, str] | None

    @classmethod
    def open(cls, names: tuple[str, ...], risk: Mapping[str, str] | None) -> _OpenedSignals:
        if "hatesonar" in names:
            _sonar_session()
        if "profanity" in names:
            _profanity([])
        return cls(names, risk)

    def matrix(self, chunk: Sequence[Item]) -> np.ndarray:
        return matrix(self.names, chunk, self.risk)


def column_names(names: Sequence[str]) -> list[str]:
    return [c for n in check_names(names) for c in COLUMNS[n]]


def _risk_columns(items: Sequence[Item], risk: Mapping[str, str]) -> np.ndarray:
    out = np.zeros((len(items), 2))
    for i, item in enumerate(items):
        level = risk.get(template_key(item.template)) if item.template else None
        if level == "low":
            out[i, 0] = 1.0
        elif level == "high":
            out[i, 1] = 1.0
    return out


_SONAR: list[Any] = []


def _sonar_session() -> Any:
    """HateSonar's ONNX graph with its StringNormalizer's locale set to C.UTF-8: the graph
    asks for en_US.UTF-8 by default, which a machine without that locale cannot construct
    (onnxruntime fails at load); lower-casing, the only normalisation it does, is unchanged
    for ASCII text."""
    if not _SONAR:
        try:
            import onnx
            import onnxruntime as ort
            from hatesonar.api import DEFAULT_MODEL_FILE
        except ImportError as exc:
            raise SignalError(f"signal hatesonar needs the hatesonar package: {exc}") from None
        graph = onnx.load(str(DEFAULT_MODEL_FILE))
        for node in graph.graph.node:
            if node.op_type == "StringNormalizer" and not any(
                a.name == "locale" for a in node.attribute
            ):
                node.attribute.append(onnx.helper.make_attribute("locale", "C.UTF-8"))
        _SONAR.append(
            ort.InferenceSession(graph.SerializeToString(), providers=["CPUExecutionProvider"])
        )
    return _SONAR[0]


def _hatesonar(texts: Sequence[str]) -> np.ndarray:
    """Batches of BATCH texts: the graph's TF-IDF output is dense (texts x vocabulary)."""
    out = np.zeros((len(texts), 2))
    for start in range(0, len(texts), BATCH):
        batch = np.asarray(list(texts[start : start + BATCH]), dtype=object)
        _, probabilities = _sonar_session().run(None, {"text": batch})
        out[start : start + len(batch)] = [[p[0], p[1]] for p in probabilities]
    return out


def _profanity(texts: Sequence[str]) -> np.ndarray:
    try:
        from profanity_check import predict_prob
    except ImportError as exc:
        raise SignalError(f"signal profanity needs alt-profanity-check: {exc}") from None
    out = np.zeros((len(texts), 1))
    for start in range(0, len(texts), BATCH):
        batch = list(texts[start : start + BATCH])
        out[start : start + len(batch), 0] = predict_prob(batch)
    return out
