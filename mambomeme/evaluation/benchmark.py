"""Load and validate a benchmark folder laid out as ../shared/benchmark/FORMAT.md describes.

    <benchmark>/benchmark.json  queries.jsonl  qrels.txt  exact.jsonl  safety.tsv

Every check raises `BenchmarkError` naming the file and line, so a benchmark written elsewhere
(the hidden partition) either loads exactly as written or is refused with a reason; nothing is
skipped. The benchmark's sha256 covers all five files: any edit changes it, and runs made against
another edit are refused when scored (see `runs.check_comparable`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mambomeme.errors import BenchmarkError

SLICES = ("entity", "quote", "topic", "concept", "visual", "noisy")
EXACT_SLICES = ("entity", "quote")  # exact-target groups are required for these
SUBSETS = ("safety", "multi_cue", "filter")
PARTITIONS = ("dev", "hidden")
FILTER_KEYS = ("kind", "language", "template")
KINDS = ("template", "meme")
SAFETY_LABELS = ("safe", "unsafe")
MAX_GRADE = 3
RELEVANT = 2  # Hit@k, Recall@10, MRR@10 and CorrectEmpty use grade >= 2
FILES = ("benchmark.json", "queries.jsonl", "qrels.txt", "exact.jsonl", "safety.tsv")

_INFO_KEYS: dict[str, type] = {
    "name": str,
    "version": str,
    "partition": str,
    "corpus": str,
    "judgement_set": str,
    "provisional": bool,
    "exposed": bool,
}
_QUERY_REQUIRED = ("qid", "family", "slice", "text", "answerable")
_QUERY_OPTIONAL = ("cues", "filters", "subsets")


@dataclass(frozen=True)
class BenchmarkInfo:
    name: str
    version: str
    partition: str
    corpus: str
    judgement_set: str
    provisional: bool
    exposed: bool


@dataclass(frozen=True)
class Query:
    qid: str
    family: str
    slice: str
    text: str
    cues: tuple[str, ...]
    filters: tuple[tuple[str, str], ...]  # sorted (key, value) pairs; see `filter_dict`
    subsets: tuple[str, ...]
    answerable: bool

    @property
    def all_cues(self) -> list[str]:
        """What the engine receives: [text] + cues."""
        return [self.text, *self.cues]

    @property
    def filter_dict(self) -> dict[str, str]:
        return dict(self.filters)


@dataclass(frozen=True)
class Benchmark:
    path: Path
    info: BenchmarkInfo
    queries: tuple[Query, ...]
    qrels: Mapping[str, Mapping[str, int]]  # qid -> item_id -> grade
    exact: Mapping[str, tuple[tuple[str, ...], ...]]  # qid -> exact-target groups
    safety: Mapping[str, str]  # item_id -> "safe" | "unsafe"
    sha256: str

    def versions(self) -> dict[str, str]:
        """The fields two things must share to be compared (plus the content checksum)."""
        return {
            "benchmark": self.info.name,
            "benchmark_version": self.info.version,
            "judgement_set": self.info.judgement_set,
            "corpus": self.info.corpus,
            "benchmark_sha256": self.sha256,
        }


def load_benchmark(path: Path) -> Benchmark:
    """Read and validate every file of the benchmark folder at `path`."""
    path = Path(path)
    if not path.is_dir():
        raise BenchmarkError(f"{path}: not a benchmark folder")
    for name in FILES:
        if not (path / name).is_file():
            raise BenchmarkError(f"{path / name}: missing (a benchmark folder holds {FILES})")
    info = _read_info(path / "benchmark.json")
    located = _read_queries(path / "queries.jsonl")
    queries = [q for _, q in located]
    by_qid = {q.qid: q for q in queries}
    qrels = _read_qrels(path / "qrels.txt", by_qid)
    exact = _read_exact(path / "exact.jsonl", by_qid)
    safety = _read_safety(path / "safety.tsv", qrels)
    _check_answerable(located, qrels, exact)
    digest = hashlib.sha256()
    for name in FILES:
        digest.update(name.encode() + b"\0" + (path / name).read_bytes() + b"\0")
    return Benchmark(path, info, tuple(queries), qrels, exact, safety, digest.hexdigest())


def _lines(path: Path) -> list[tuple[str, str]]:
    """(where, text) for every non-blank line; `where` is 'file:line'."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise BenchmarkError(f"{path}: not valid UTF-8 (byte {exc.start})") from None
    return [(f"{path}:{n}", line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def _json_line(where: str, line: str) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        raise BenchmarkError(f"{where}: invalid JSON: {exc.msg}") from None
    if not isinstance(value, dict):
        raise BenchmarkError(f"{where}: expected a JSON object")
    return value


def _read_info(path: Path) -> BenchmarkInfo:
    text = path.read_text(encoding="utf-8")
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BenchmarkError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from None
    if not isinstance(raw, dict):
        raise BenchmarkError(f"{path}:1: expected a JSON object")

    def line_of(key: str) -> int:
        for number, line in enumerate(text.splitlines(), 1):
            if f'"{key}"' in line:
                return number
        return 1

    for key in sorted(set(raw) - set(_INFO_KEYS)):
        raise BenchmarkError(f"{path}:{line_of(key)}: unknown key {key!r}")
    for key, kind in _INFO_KEYS.items():
        if key not in raw:
            raise BenchmarkError(f"{path}:1: missing key {key!r}")
        if not isinstance(raw[key], kind) or (kind is str and not raw[key].strip()):
            raise BenchmarkError(
                f"{path}:{line_of(key)}: {key!r} must be a non-empty {kind.__name__}"
            )
    if raw["partition"] not in PARTITIONS:
        raise BenchmarkError(
            f"{path}:{line_of('partition')}: partition must be one of {PARTITIONS}"
        )
    return BenchmarkInfo(**raw)


def _read_queries(path: Path) -> list[tuple[str, Query]]:
    """Every query with the 'file:line' it came from."""
    queries: list[tuple[str, Query]] = []
    seen: dict[str, str] = {}
    for where, line in _lines(path):
        raw = _json_line(where, line)
        for key in sorted(set(raw) - set(_QUERY_REQUIRED) - set(_QUERY_OPTIONAL)):
            raise BenchmarkError(f"{where}: unknown key {key!r}")
        for key in _QUERY_REQUIRED:
            if key not in raw:
                raise BenchmarkError(f"{where}: missing key {key!r}")
        for key in ("qid", "family", "slice", "text"):
            if not isinstance(raw[key], str) or not raw[key].strip():
                raise BenchmarkError(f"{where}: {key!r} must be a non-empty string")
        qid = raw["qid"]
        if qid != qid.strip() or any(c.isspace() for c in qid):
            raise BenchmarkError(f"{where}: qid {qid!r} contains whitespace")
        if qid in seen:
            raise BenchmarkError(f"{where}: duplicate qid {qid!r} (first at {seen[qid]})")
        seen[qid] = where
        if raw["slice"] not in SLICES:
            raise BenchmarkError(f"{where}: slice {raw['slice']!r} is not one of {SLICES}")
        if not isinstance(raw["answerable"], bool):
            raise BenchmarkError(f"{where}: 'answerable' must be true or false")
        cues = raw.get("cues", [])
        if not isinstance(cues, list) or not all(isinstance(c, str) and c.strip() for c in cues):
            raise BenchmarkError(f"{where}: 'cues' must be a list of non-empty strings")
        subsets = raw.get("subsets", [])
        if not isinstance(subsets, list) or any(s not in SUBSETS for s in subsets):
            raise BenchmarkError(f"{where}: 'subsets' must be a list drawn from {SUBSETS}")
        if len(set(subsets)) != len(subsets):
            raise BenchmarkError(f"{where}: 'subsets' repeats a value")
        filters = _filters(where, raw.get("filters", {}))
        query = Query(
            qid,
            raw["family"],
            raw["slice"],
            raw["text"],
            tuple(cues),
            filters,
            tuple(subsets),
            raw["answerable"],
        )
        queries.append((where, query))
    if not queries:
        raise BenchmarkError(f"{path}: no queries")
    return queries


def _filters(where: str, raw: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(raw, dict):
        raise BenchmarkError(f"{where}: 'filters' must be an object")
    for key, value in raw.items():
        if key not in FILTER_KEYS:
            raise BenchmarkError(f"{where}: filter {key!r} is not one of {FILTER_KEYS}")
        if not isinstance(value, str) or not value.strip():
            raise BenchmarkError(f"{where}: filter {key!r} must be a non-empty string")
    if "kind" in raw and raw["kind"] not in KINDS:
        raise BenchmarkError(f"{where}: filter 'kind' must be one of {KINDS}")
    return tuple(sorted(raw.items()))


def _read_qrels(path: Path, by_qid: Mapping[str, Query]) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for where, line in _lines(path):
        parts = line.split()
        if len(parts) != 4:
            raise BenchmarkError(f"{where}: expected '<qid> 0 <item_id> <grade>', got {line!r}")
        qid, zero, item_id, grade_text = parts
        if zero != "0":
            raise BenchmarkError(f"{where}: second field must be 0, got {zero!r}")
        if qid not in by_qid:
            raise BenchmarkError(f"{where}: qid {qid!r} is not in queries.jsonl")
        if grade_text not in {str(g) for g in range(MAX_GRADE + 1)}:
            raise BenchmarkError(
                f"{where}: grade must be an integer 0..{MAX_GRADE}, got {grade_text!r}"
            )
        grade = int(grade_text)
        if item_id in qrels.get(qid, {}):
            raise BenchmarkError(f"{where}: duplicate judgement of {item_id!r} for {qid!r}")
        if grade >= RELEVANT and not by_qid[qid].answerable:
            raise BenchmarkError(
                f"{where}: {qid!r} is a no-match query (answerable false) but {item_id!r} has "
                f"grade {grade} >= {RELEVANT}"
            )
        qrels.setdefault(qid, {})[item_id] = grade
    return qrels


def read_exact_groups(path: Path) -> dict[str, tuple[str, tuple[tuple[str, ...], ...]]]:
    """An exact.jsonl-form file: qid -> (where, groups of item ids), shape-checked. Shared by
    the benchmark loader and pooling (which reads a benchmark's exact-targets file)."""
    exact: dict[str, tuple[str, tuple[tuple[str, ...], ...]]] = {}
    for where, line in _lines(Path(path)):
        raw = _json_line(where, line)
        if set(raw) != {"qid", "groups"}:
            raise BenchmarkError(f"{where}: expected exactly the keys 'qid' and 'groups'")
        qid, groups = raw["qid"], raw["groups"]
        if qid in exact:
            raise BenchmarkError(f"{where}: duplicate exact-target line for {qid!r}")
        if (
            not isinstance(groups, list)
            or not groups
            or not all(isinstance(g, list) and g for g in groups)
            or not all(isinstance(i, str) and i.strip() for g in groups for i in g)
        ):
            raise BenchmarkError(
                f"{where}: 'groups' must be a non-empty list of non-empty lists of item ids"
            )
        exact[qid] = (where, tuple(tuple(g) for g in groups))
    return exact


def _read_exact(path: Path, by_qid: Mapping[str, Query]) -> dict[str, tuple[tuple[str, ...], ...]]:
    exact: dict[str, tuple[tuple[str, ...], ...]] = {}
    for qid, (where, groups) in read_exact_groups(path).items():
        if qid not in by_qid:
            raise BenchmarkError(f"{where}: qid {qid!r} is not in queries.jsonl")
        if not by_qid[qid].answerable:
            raise BenchmarkError(
                f"{where}: {qid!r} is a no-match query and cannot have exact targets"
            )
        exact[qid] = groups
    return exact


def _read_safety(path: Path, qrels: Mapping[str, Mapping[str, int]]) -> dict[str, str]:
    safety: dict[str, str] = {}
    for where, line in _lines(path):
        parts = line.rstrip("\r\n").split("\t")
        if len(parts) != 2:
            raise BenchmarkError(f"{where}: expected '<item_id>\\t<safe|unsafe>', got {line!r}")
        item_id, label = parts[0].strip(), parts[1].strip()
        if not item_id:
            raise BenchmarkError(f"{where}: empty item id")
        if label not in SAFETY_LABELS:
            raise BenchmarkError(
                f"{where}: safety label must be one of {SAFETY_LABELS}, got {label!r}"
            )
        if item_id in safety:
            raise BenchmarkError(f"{where}: duplicate safety label for {item_id!r}")
        safety[item_id] = label
    qrels_path = path.parent / "qrels.txt"
    for where, line in _lines(qrels_path):
        item_id = line.split()[2]
        if item_id not in safety:
            raise BenchmarkError(f"{where}: judged item {item_id!r} has no label in {path}")
    return safety


def _check_answerable(
    located: list[tuple[str, Query]],
    qrels: Mapping[str, Mapping[str, int]],
    exact: Mapping[str, tuple[tuple[str, ...], ...]],
) -> None:
    """Answerable queries need a grade >= 2 item; entity and quote ones need exact groups."""
    for where, q in located:
        if not q.answerable:
            continue
        if not any(g >= RELEVANT for g in qrels.get(q.qid, {}).values()):
            raise BenchmarkError(
                f"{where}: answerable query {q.qid!r} has no qrels with grade >= {RELEVANT}"
            )
        if q.slice in EXACT_SLICES and q.qid not in exact:
            raise BenchmarkError(
                f"{where}: {q.slice} query {q.qid!r} has no exact-target groups in exact.jsonl"
            )


def read_queries(path: Path) -> list[Query]:
    """Validated queries of one queries.jsonl (for pooling before qrels exist)."""
    return [q for _, q in _read_queries(Path(path))]
