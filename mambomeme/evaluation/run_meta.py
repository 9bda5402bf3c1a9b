"""A run's metadata (FILE.meta.json): the typed record, its one serialisation and its reader.

The file is `json.dumps(meta, indent=2, sort_keys=True) + "\n"` of a flat object: the fields of
COMPARED_FIELDS, the system and benchmark partition, what produced the run (the provenance
keys, written by `mambomeme run` as one group), the admitted selection of a hidden-benchmark
run, and any other key a caller added, kept as it is so a file reads back to the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from mambomeme.errors import BenchmarkError
from mambomeme.evaluation.versions import COMPARED_FIELDS, RUN_FORMAT


@dataclass(frozen=True)
class Provenance:
    """What produced a run: written together by `mambomeme run`, absent from hand-made runs."""

    corpus_manifest: str
    embedding_manifest: str | None  # the dense matrix served for the system (None: no dense)
    embedding_manifest_sha256: str | None
    build: str
    code_commit: str | None  # None outside a git checkout
    limit: int
    engine_system: str  # the engine's system name (the run may be labelled e.g. "shipped")


@dataclass(frozen=True)
class RunMeta:
    """The .meta.json of one run; `extra` holds keys this code does not know, as read."""

    system: str
    benchmark: str
    benchmark_version: str
    judgement_set: str
    corpus: str
    benchmark_sha256: str
    benchmark_partition: str
    safety_policy: str
    score_version: str
    corpus_manifest_sha256: str
    provenance: Provenance | None = None
    selection_sha256: str | None = None  # only on runs of a hidden benchmark
    extra: Mapping[str, Any] = field(default_factory=dict)

    def compared(self) -> dict[str, str]:
        """The COMPARED_FIELDS values, by name."""
        return {name: str(getattr(self, name)) for name in COMPARED_FIELDS}

    def to_dict(self) -> dict[str, Any]:
        """The flat JSON object of the file (provenance keys inline, extra keys as they are),
        keys sorted as in the file (the scorecard copies it in this order)."""
        data: dict[str, Any] = dict(self.extra)
        data["format"] = RUN_FORMAT
        data.update({name: getattr(self, name) for name in _CORE})
        if self.provenance is not None:
            data.update({name: getattr(self.provenance, name) for name in _PROVENANCE})
        if self.selection_sha256 is not None:
            data["selection_sha256"] = self.selection_sha256
        return dict(sorted(data.items()))

    def to_json(self) -> str:
        """The file's text: the one place a run's metadata is serialised."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> RunMeta:
        """Validate a parsed meta object; errors name `where` (the file) and the key."""
        if data.get("format") != RUN_FORMAT:
            raise BenchmarkError(f"{where}:1: not a {RUN_FORMAT} meta file")
        for name in _CORE:
            if name not in data:
                raise BenchmarkError(f"{where}:1: missing key {name!r}")
            if not isinstance(data[name], str):
                raise BenchmarkError(f"{where}:1: key {name!r} must be a string")
        present = [name for name in _PROVENANCE if name in data]
        provenance = None
        if present:
            missing = [name for name in _PROVENANCE if name not in data]
            if missing:
                raise BenchmarkError(f"{where}:1: missing key {missing[0]!r}")
            provenance = _provenance(data, where)
        selection = data.get("selection_sha256")
        if selection is not None and not isinstance(selection, str):
            raise BenchmarkError(f"{where}:1: key 'selection_sha256' must be a string")
        known = {"format", "selection_sha256", *_CORE, *_PROVENANCE}
        return cls(
            **{name: data[name] for name in _CORE},
            provenance=provenance,
            selection_sha256=selection,
            extra={k: v for k, v in data.items() if k not in known},
        )


_CORE = tuple(
    f.name for f in fields(RunMeta) if f.name not in ("provenance", "selection_sha256", "extra")
)
_PROVENANCE = tuple(f.name for f in fields(Provenance))
_OPTIONAL_TEXT = ("embedding_manifest", "embedding_manifest_sha256", "code_commit")


def _provenance(data: Mapping[str, Any], where: str) -> Provenance:
    for name in _PROVENANCE:
        value = data[name]
        if name == "limit":
            ok = isinstance(value, int) and not isinstance(value, bool)
        else:
            ok = isinstance(value, str) or (value is None and name in _OPTIONAL_TEXT)
        if not ok:
            raise BenchmarkError(f"{where}:1: key {name!r} has the wrong type: {value!r}")
    return Provenance(**{name: data[name] for name in _PROVENANCE})


def read_meta(path: Path) -> RunMeta:
    """Read and validate FILE.meta.json; a missing or malformed file is a BenchmarkError."""
    if not path.is_file():
        raise BenchmarkError(f"{path}: missing (runs are written by `mambomeme run`)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise BenchmarkError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise BenchmarkError(f"{path}:1: not a {RUN_FORMAT} meta file")
    return RunMeta.from_dict(data, str(path))
