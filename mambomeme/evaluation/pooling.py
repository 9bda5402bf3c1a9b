"""Judgement pools: what each annotator is asked to grade, blind and shuffled per annotator.

For each query the pool is the deduplicated union of (seeds/000, "Relevance labels"):
  * the top `depth` (10) results of every system in the comparison,
  * the query's manual gold items and hard negatives (pool config),
`build_pool` can leave out pairs already judged; the pool stage instead keeps every candidate
in pool.jsonl (marked `judged`) and gives annotators only the unjudged ones (not asked twice).

The pool keeps where each candidate came from (`sources`, e.g. "bm25@3", "gold") for analysis
in pools/<benchmark>/pool.jsonl; annotator files never show it (see export.py). Each annotator
gets the same candidates in their own order: `random.Random(seed)` shuffles the query order and
the candidates within each query, with the seed recorded in the pool manifest.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from mambomeme.errors import BenchmarkError
from mambomeme.evaluation.benchmark import Query, read_exact_groups
from mambomeme.evaluation.benchmark import _read_queries as _located_queries

POOL_FILE = "pool.jsonl"
MANIFEST_FILE = "manifest.json"
_CONFIG_KEYS = {
    "systems",
    "depth",
    "annotators",
    "gold",
    "hard_negatives",
    "earlier_rounds",
    "exact_targets",
    "families",
    "partition",
}


@dataclass(frozen=True)
class PoolConfig:
    """The comparison that is pooled and who annotates it (a YAML file next to the queries)."""

    systems: tuple[str, ...]
    depth: int
    annotators: tuple[tuple[str, int], ...]  # (name, shuffle seed)
    gold: Mapping[str, tuple[str, ...]]  # qid -> item ids always pooled
    hard_negatives: Mapping[str, tuple[str, ...]]  # qid -> item ids always pooled
    exact_targets: str  # exact-target groups file (relative to the config), "" = none
    families: str  # families.csv path (relative to the working dir), "" = pool every item
    partition: str  # with `families`: only items of this partition's families are pooled
    earlier: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # earlier rounds' pairs


@dataclass(frozen=True)
class Candidate:
    qid: str
    item_id: str
    sources: tuple[str, ...]  # "<system>@<rank>", "gold", "hard_negative"


def read_queries(path: Path) -> list[Query]:
    """queries.jsonl through the benchmark loader's own validation (no second loader)."""
    return [q for _, q in _located_queries(Path(path))]


def load_pool_config(path: Path) -> PoolConfig:
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise BenchmarkError(f"{path}: cannot read pool config: {exc}") from None
    if not isinstance(raw, dict):
        raise BenchmarkError(f"{path}: pool config must be a mapping")
    for key in sorted(set(raw) - _CONFIG_KEYS):
        raise BenchmarkError(f"{path}: unknown key {key!r} (known: {sorted(_CONFIG_KEYS)})")
    systems = raw.get("systems")
    if not isinstance(systems, list) or not systems or not all(isinstance(s, str) for s in systems):
        raise BenchmarkError(f"{path}: 'systems' must be a non-empty list of system names")
    depth = raw.get("depth", 10)
    if not isinstance(depth, int) or not 1 <= depth <= 100:
        raise BenchmarkError(f"{path}: 'depth' must be an integer 1..100")
    annotators = raw.get("annotators")
    if not isinstance(annotators, dict) or not annotators:
        raise BenchmarkError(f"{path}: 'annotators' must map annotator names to integer seeds")
    for name, seed in annotators.items():
        if not isinstance(name, str) or not name.replace("-", "").isalnum():
            raise BenchmarkError(f"{path}: annotator name {name!r} must be letters, digits, '-'")
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise BenchmarkError(f"{path}: annotators.{name} seed must be an integer")
    if len(set(annotators.values())) != len(annotators):
        raise BenchmarkError(f"{path}: every annotator needs a different shuffle seed")
    exact = raw.get("exact_targets", "")
    if not isinstance(exact, str):
        raise BenchmarkError(f"{path}: 'exact_targets' must be a file name")
    families, partition = raw.get("families", ""), raw.get("partition", "")
    if (
        not isinstance(families, str)
        or not isinstance(partition, str)
        or (bool(families) != bool(partition))
    ):
        raise BenchmarkError(
            f"{path}: 'families' (a families.csv path) and 'partition' go together"
        )
    return PoolConfig(
        tuple(systems),
        depth,
        tuple(sorted(annotators.items())),
        _id_lists(path, raw, "gold"),
        _id_lists(path, raw, "hard_negatives"),
        exact,
        families,
        partition,
        _earlier_rounds(path, raw.get("earlier_rounds", [])),
    )


def _earlier_rounds(path: Path, files: Any) -> dict[str, tuple[str, ...]]:
    """`earlier_rounds`: TSV files of "qid<TAB>item_id" pairs pooled in an earlier round. They
    stay in the pool, so a new round adds candidates and never drops judged ones."""
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise BenchmarkError(f"{path}: 'earlier_rounds' must be a list of TSV file names")
    pairs: dict[str, list[str]] = {}
    for name in files:
        tsv = path.parent / name
        try:
            lines = tsv.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise BenchmarkError(f"{tsv}: cannot read earlier round: {exc.strerror}") from None
        for number, line in enumerate(lines, 1):
            parts = line.split("\t")
            if len(parts) != 2 or not all(parts):
                raise BenchmarkError(f"{tsv}:{number}: expected 'qid<TAB>item_id'")
            pairs.setdefault(parts[0], []).append(parts[1])
    return {qid: tuple(ids) for qid, ids in pairs.items()}


def item_family(template_group: str) -> str:
    """An item's families.csv family: tg:<x> -> template:<x>, memecap:<id> -> post:memecap-<id>."""
    if template_group.startswith("tg:"):
        return "template:" + template_group[3:]
    if template_group.startswith("memecap:"):
        return "post:memecap-" + template_group[len("memecap:") :]
    return template_group


def read_partitions(path: Path) -> dict[str, str]:
    """families.csv: family -> partition (dev | hidden)."""
    import csv

    try:
        with Path(path).open(encoding="utf-8", newline="") as handle:
            return {row["family"]: row["partition"] for row in csv.DictReader(handle)}
    except (OSError, KeyError) as exc:
        raise BenchmarkError(f"{path}: cannot read families: {exc}") from None


def _id_lists(path: Path, raw: Mapping[str, Any], key: str) -> dict[str, tuple[str, ...]]:
    value = raw.get(key) or {}
    if not isinstance(value, dict):
        raise BenchmarkError(f"{path}: {key!r} must map qids to lists of item ids")
    out: dict[str, tuple[str, ...]] = {}
    for qid, ids in value.items():
        if not isinstance(ids, list) or not all(isinstance(i, str) and i for i in ids):
            raise BenchmarkError(f"{path}: {key}.{qid} must be a list of item ids")
        out[str(qid)] = tuple(ids)
    return out


def read_exact_targets(path: Path) -> dict[str, list[list[str]]]:
    """An exact-target groups file in exact.jsonl form: qid -> groups of item ids."""
    return {
        qid: [list(group) for group in groups]
        for qid, (_, groups) in read_exact_groups(Path(path)).items()
    }


Rankings = Mapping[str, Mapping[str, Sequence[str]]]  # system -> qid -> item ids in rank order


def collect_rankings(
    queries: Sequence[Query],
    systems: Sequence[str],
    search: Callable[[Query, str], Sequence[str]],
) -> dict[str, dict[str, list[str]]]:
    """Every system's ranking of every query; a failing search is an error naming both."""
    rankings: dict[str, dict[str, list[str]]] = {}
    for system in systems:
        per_query: dict[str, list[str]] = {}
        for query in queries:
            try:
                per_query[query.qid] = list(search(query, system))
            except Exception as exc:
                raise BenchmarkError(
                    f"pooling {query.qid!r} with system {system!r} failed: {exc}"
                ) from exc
        rankings[system] = per_query
    return rankings


def build_pool(
    queries: Sequence[Query],
    rankings: Rankings,
    config: PoolConfig,
    known_items: Callable[[str], bool],
    judged: frozenset[tuple[str, str]] = frozenset(),
    exact: Mapping[str, Sequence[Sequence[str]]] | None = None,
    allowed: Callable[[str], bool] = lambda item_id: True,
) -> tuple[list[Candidate], list[tuple[str, str]]]:
    """(pool, left out): the deduplicated candidates of every query, in query order then
    first-seen order, and the system results left out because `allowed(item_id)` is false
    (items of the other partition's families: a dev judgement is never about a hidden family).

    Exact-target items count as gold. Manual ids must exist in the corpus and be allowed.
    """
    qids = {q.qid for q in queries}
    extra = {
        "gold": dict(config.gold),
        "hard_negative": dict(config.hard_negatives),
        "earlier_round": dict(config.earlier),
    }
    for qid, groups in (exact or {}).items():
        extra["gold"][qid] = (*extra["gold"].get(qid, ()), *(i for g in groups for i in g))
    for kind, lists in extra.items():
        for qid, ids in lists.items():
            if qid not in qids:
                raise BenchmarkError(f"pool config: {kind} list for unknown qid {qid!r}")
            for item_id in ids:
                if not known_items(item_id) or not allowed(item_id):
                    raise BenchmarkError(
                        f"pool config: {kind} item {item_id!r} of {qid!r} "
                        "is not in the corpus or not in the pooled partition"
                    )
    pool: list[Candidate] = []
    left_out: list[tuple[str, str]] = []
    for query in queries:
        sources: dict[str, list[str]] = {}
        for system in config.systems:
            if system not in rankings:
                raise BenchmarkError(f"no rankings for pooled system {system!r}")
            for rank, item_id in enumerate(rankings[system].get(query.qid, ())[: config.depth], 1):
                sources.setdefault(item_id, []).append(f"{system}@{rank}")
        for kind, lists in extra.items():
            for item_id in lists.get(query.qid, ()):
                if kind not in sources.setdefault(item_id, []):
                    sources[item_id].append(kind)
        for item_id, where in sources.items():
            if not allowed(item_id):
                left_out.append((query.qid, item_id))
            elif (query.qid, item_id) not in judged:
                pool.append(Candidate(query.qid, item_id, tuple(where)))
    return pool, left_out


def annotator_order(pool: Sequence[Candidate], seed: int) -> list[Candidate]:
    """The pool for one annotator: query order and candidate order shuffled with `seed`.

    Candidates stay grouped by query (an annotator reads one query at a time).
    """
    rng = random.Random(seed)
    by_query: dict[str, list[Candidate]] = {}
    for c in pool:
        by_query.setdefault(c.qid, []).append(c)
    qids = sorted(by_query)
    rng.shuffle(qids)
    ordered: list[Candidate] = []
    for qid in qids:
        group = sorted(by_query[qid], key=lambda c: c.item_id)
        rng.shuffle(group)
        ordered.extend(group)
    return ordered


def write_pool(
    out_dir: Path,
    pool: Sequence[Candidate],
    manifest: Mapping[str, Any],
    judged: frozenset[tuple[str, str]] = frozenset(),
) -> None:
    """pool.jsonl (with sources and whether the pair is already judged; not for annotators)
    and manifest.json; refuses to overwrite."""
    out_dir = Path(out_dir)
    for name in (POOL_FILE, MANIFEST_FILE):
        if (out_dir / name).exists():
            raise BenchmarkError(f"{out_dir / name} exists; a new pool is a new folder")
    out_dir.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps(
            {
                "qid": c.qid,
                "item_id": c.item_id,
                "sources": list(c.sources),
                "judged": (c.qid, c.item_id) in judged,
            }
        )
        for c in pool
    ]
    (out_dir / POOL_FILE).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    (out_dir / MANIFEST_FILE).write_text(
        json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )


def read_pool(pool_dir: Path) -> list[Candidate]:
    path = Path(pool_dir) / POOL_FILE
    if not path.is_file():
        raise BenchmarkError(f"{path}: no pool here (run `mambomeme pool` first)")
    pool = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                raw = json.loads(line)
                pool.append(Candidate(raw["qid"], raw["item_id"], tuple(raw["sources"])))
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise BenchmarkError(f"{path}:{number}: bad pool line: {exc}") from None
    return pool


def read_manifest(pool_dir: Path) -> dict[str, Any]:
    path = Path(pool_dir) / MANIFEST_FILE
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise BenchmarkError(f"{path}: cannot read pool manifest: {exc}") from None
    if not isinstance(value, dict):
        raise BenchmarkError(f"{path}: pool manifest must be an object")
    return value
