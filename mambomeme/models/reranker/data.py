"""Training pairs for the reranker, from dev families only, split by query family.

Two sources (issue 20):
  - judgements: every graded (query, item) pair of a frozen dev judgement set (dev-v1), the
    final grade 0..3 as the label grade / 3; hard negatives (grade 0) kept;
  - knowledge: for each dev template family, sentences of its template knowledge (meaning,
    visual description, typical use) as queries for a few of its own items (label 1) and for
    items of other families (label 0); for each dev MemeCap post, its own meaning or visual
    description as a query for the post. The field a query was taken from is left out of the
    item text on both sides (features.py), so a query is never a substring of its positive.

Hygiene: a pair is kept only when its query family and its item's family are allowed (dev in
families.csv, or a fixture family) and not held out (the families of the evaluation
benchmark, dev-v2); `check_families` refuses any pair that is not. Every random choice takes
the seed; the output is sorted, so a build is byte-for-byte repeatable.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from mambomeme.corpus.knowledge import TemplateKnowledge, key, knowledge_checksum, load_knowledge
from mambomeme.corpus.manifest import sha256_file
from mambomeme.corpus.schema import Item
from mambomeme.errors import MamboMemeError
from mambomeme.evaluation.benchmark import Query, read_queries
from mambomeme.evaluation.judgement_sets import versions
from mambomeme.evaluation.pooling import item_family, read_partitions
from mambomeme.evaluation.split import read_split
from mambomeme.models.reranker.features import item_text

MAX_QUERY_WORDS = 25
# a knowledge query's source field (the end of its qid) -> the item fields its pairs leave out
TEMPLATE_LEFT_OUT = {
    "meaning": frozenset({"template_meaning"}),
    "visual": frozenset({"template_visual"}),
    "use": frozenset[str](),
}
POST_FIELDS = {"meaning": "meaning", "visual": "visual_description"}  # ... and a post's own
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


class Pair(NamedTuple):
    """One training pair: a query, an item's text, a label in [0, 1]."""

    qid: str  # the query's id (judgement qid, or kn:<family>:<field>)
    family: str  # the query's family (the split unit)
    item_id: str
    item_family: str
    query: str
    text: str
    label: float
    source: str  # "judgement" | "knowledge"


class HygieneError(MamboMemeError):
    """A training pair from a family that is not dev, or one held out for evaluation."""


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """TREC qrels (`qid 0 item grade`) as qid -> item -> grade."""
    out: dict[str, dict[str, int]] = {}
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 4:
            raise MamboMemeError(f"{path}:{number}: expected 'qid 0 item grade'")
        out.setdefault(parts[0], {})[parts[2]] = int(parts[3])
    return out


def held_out_families(spec: str) -> set[str]:
    """The query families of a `rerank.held_out` entry: "benchmarks/B" (all of B's) or
    "benchmarks/B@check" (only those on B's check side, evaluation/split.py: the tune side may
    train, as it may tune)."""
    path, _, side = str(spec).partition("@")
    families = {q.family for q in read_queries(Path(path) / "queries.jsonl")}
    if not side:
        return families
    split = read_split(Path(path))
    if split is None or side not in ("tune", "check"):
        raise MamboMemeError(f"rerank.held_out {spec!r}: {path} has no {side!r} side")
    return {f for f in families if split.side(f) == side}


def allowed_families(
    partitions: Mapping[str, str], extra: Iterable[str] = (), held_out: Iterable[str] = ()
) -> frozenset[str]:
    """Families a pair may come from: dev in families.csv plus `extra` (the fixture's own),
    minus `held_out` (the evaluation benchmark's query families)."""
    dev = {family for family, partition in partitions.items() if partition == "dev"}
    return frozenset((dev | set(extra)) - set(held_out))


def judgement_pairs(
    queries: Sequence[Query],
    qrels: Mapping[str, Mapping[str, int]],
    items: Mapping[str, Item],
    allowed: frozenset[str],
) -> list[Pair]:
    """Every judged pair of an allowed query family whose item is in `items` and of an allowed
    family; label = grade / 3 (grades 0..3)."""
    pairs = []
    for query in queries:
        if query.family not in allowed:
            continue
        for item_id, grade in sorted(qrels.get(query.qid, {}).items()):
            item = items.get(item_id)
            if item is None or item_family(item.template_group) not in allowed:
                continue
            pairs.append(
                Pair(
                    query.qid,
                    query.family,
                    item_id,
                    item_family(item.template_group),
                    query.text,
                    item_text(item),
                    min(max(grade, 0), 3) / 3.0,
                    "judgement",
                )
            )
    return pairs


def _first_sentence(text: str) -> str:
    sentence = _SENTENCE.split(text.strip(), maxsplit=1)[0].strip().rstrip(".")
    return " ".join(sentence.split()[:MAX_QUERY_WORDS])


def knowledge_pairs(
    items: Iterable[Item],
    knowledge: Mapping[str, TemplateKnowledge],
    allowed: frozenset[str],
    seed: int,
    positives: int = 3,
    negatives: int = 4,
) -> list[Pair]:
    """Template-knowledge and MemeCap-caption queries with positives from their own family and
    negatives from other allowed families (see the module docstring)."""
    by_family: dict[str, list[Item]] = {}
    for item in items:
        family = item_family(item.template_group)
        if family in allowed and item.eligible:
            by_family.setdefault(family, []).append(item)
    families = sorted(by_family)
    rng = random.Random(seed)
    pairs: list[Pair] = []
    for family in families:
        members = sorted(by_family[family], key=lambda i: i.id)
        entry = next(
            (knowledge[key(i.template)] for i in members if key(i.template) in knowledge), None
        )
        queries: list[tuple[str, str, frozenset[str], list[Item]]] = []
        if entry is not None:
            chosen = rng.sample(members, min(positives, len(members)))
            for name, text in (
                ("meaning", entry.meaning),
                ("visual", entry.visual_description),
                ("use", entry.typical_use),
            ):
                if text.strip():
                    queries.append((name, _first_sentence(text), TEMPLATE_LEFT_OUT[name], chosen))
        elif family.startswith("post:"):
            post = members[0]
            options = [
                (name, getattr(post, field), frozenset({field}))
                for name, field in POST_FIELDS.items()
                if getattr(post, field).strip()
            ]
            if options:
                name, text, without = rng.choice(options)
                queries.append((name, _first_sentence(text), without, [post]))
        others = [f for f in families if f != family]
        for name, text, without, own in queries:
            if not text or not others:
                continue
            qid = f"kn:{family}:{name}"
            for item in own:
                pairs.append(
                    Pair(
                        qid,
                        family,
                        item.id,
                        family,
                        text,
                        item_text(item, without),
                        1.0,
                        "knowledge",
                    )
                )
            for other in rng.sample(others, min(negatives, len(others))):
                item = rng.choice(sorted(by_family[other], key=lambda i: i.id))
                pairs.append(
                    Pair(
                        qid,
                        family,
                        item.id,
                        other,
                        text,
                        item_text(item, without),
                        0.0,
                        "knowledge",
                    )
                )
    return pairs


def left_out(pair: Pair) -> frozenset[str]:
    """The item fields a knowledge pair's text leaves out (its query's source field)."""
    name = pair.qid.rsplit(":", 1)[-1]
    if pair.family.startswith("post:"):
        return frozenset({POST_FIELDS[name]})
    return TEMPLATE_LEFT_OUT[name]


def check_families(pairs: Iterable[Pair], allowed: frozenset[str]) -> None:
    """Refuse any pair whose query or item family is not allowed (hidden, unknown, held out)."""
    bad = sorted({f for p in pairs for f in (p.family, p.item_family) if f not in allowed})
    if bad:
        shown = ", ".join(bad[:5]) + (" ..." if len(bad) > 5 else "")
        raise HygieneError(f"training pairs from families that are not allowed: {shown}")


def cap_knowledge(pairs: Sequence[Pair], max_pairs: int, seed: int) -> list[Pair]:
    """All judgement pairs, plus knowledge queries (whole, chosen by seed) up to `max_pairs`."""
    judged = [p for p in pairs if p.source == "judgement"]
    by_qid: dict[str, list[Pair]] = {}
    for p in pairs:
        if p.source != "judgement":
            by_qid.setdefault(p.qid, []).append(p)
    qids = sorted(by_qid)
    random.Random(seed).shuffle(qids)
    kept = list(judged)
    for qid in qids:
        if len(kept) + len(by_qid[qid]) > max_pairs:
            continue
        kept.extend(by_qid[qid])
    return sorted(kept)


def split_by_family(
    pairs: Sequence[Pair], validation_share: float, seed: int
) -> tuple[list[Pair], list[Pair]]:
    """(train, validation): a query family's pairs all on one side, chosen by a seeded hash of
    the family name (stable when other families come or go)."""

    def side(family: str) -> bool:
        digest = hashlib.sha256(f"{seed}:{family}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64 < validation_share

    train = [p for p in pairs if not side(p.family)]
    validation = [p for p in pairs if side(p.family)]
    return train, validation


def pairs_sha256(pairs: Iterable[Pair]) -> str:
    """A checksum of the pairs in order (the manifest's data version)."""
    digest = hashlib.sha256()
    for p in pairs:
        digest.update("\x1f".join(map(str, p)).encode("utf-8") + b"\x1e")
    return digest.hexdigest()


@dataclass(frozen=True)
class TrainingSet:
    train: list[Pair]
    validation: list[Pair]
    data: dict[str, Any]  # versions and checksums of every input, counts (the manifest's)


def sample(found: TrainingSet, train_pairs: int, validation_queries: int, seed: int) -> TrainingSet:
    """A seeded sample: `train_pairs` training pairs and the pairs of `validation_queries`
    judgement queries for validation (params rerank.sample; the fixture's tiny model trains in
    about a minute of CPU this way)."""
    rng = random.Random(seed)
    judged = sorted({p.qid for p in found.validation if p.source == "judgement"})
    held = set(rng.sample(judged, min(validation_queries, len(judged))))
    train = sorted(rng.sample(found.train, min(train_pairs, len(found.train))))
    validation = [p for p in found.validation if p.qid in held]
    data = dict(found.data, sample={"train_pairs": len(train), "validation_queries": len(held)})
    return TrainingSet(train, validation, data)


def own_families(items: Iterable[Item], queries: Iterable[Query]) -> set[str]:
    """The families of a corpus that families.csv does not list (the fixture's own): its
    queries' families and its items' template families."""
    return {q.family for q in queries} | {item_family(i.template_group) for i in items}


def build_training_set(
    items: Mapping[str, Item],
    rerank: Mapping[str, Any],
    extra_families: Iterable[str] = (),
    build: Path | None = None,
) -> TrainingSet:
    """The pairs params `rerank` names: the latest judgement set of `rerank.benchmark`, the
    knowledge pairs of `items` (with `rerank.hard_negatives` dense-ranked negatives each, from
    the dense index of `build`: negatives.py), minus the query families of
    `rerank.held_out`; checked, capped and split by query family. `extra_families` are allowed
    besides families.csv's dev ones (the fixture's own, for the fixture build)."""
    benchmark = Path(rerank["benchmark"])
    sets = versions(Path(rerank["judgements"]), benchmark.name)
    if not sets:
        raise MamboMemeError(f"{rerank['judgements']}: no judgement set of {benchmark.name}")
    judgement_set = sets[-1][1]
    queries = read_queries(benchmark / "queries.jsonl")
    held_out = sorted(set().union(*(held_out_families(p) for p in rerank.get("held_out", []))))
    families_csv = Path(rerank["families"])
    allowed = allowed_families(read_partitions(families_csv), extra_families, held_out)
    seed = int(rerank["seed"])
    judged = judgement_pairs(queries, read_qrels(judgement_set / "qrels.txt"), items, allowed)
    knowledge = load_knowledge(Path(rerank["knowledge"]))
    derived = knowledge_pairs(
        items.values(), knowledge, allowed, seed, int(rerank["positives"]), int(rerank["negatives"])
    )
    hard = int(rerank.get("hard_negatives", 0))
    depth = int(rerank.get("hard_depth", 30))
    if hard > 0:
        if build is None:
            raise MamboMemeError("params rerank.hard_negatives needs the build's dense index")
        # imported here: negatives.py builds on this module's Pair
        from mambomeme.models.reranker.negatives import Neighbours, hard_negative_pairs

        neighbours = Neighbours(build, items, allowed)
        derived += hard_negative_pairs(derived, items, neighbours, hard, depth, seed)
    pairs = cap_knowledge([*judged, *derived], int(rerank["max_pairs"]), seed)
    check_families(pairs, allowed)
    train, validation = split_by_family(pairs, float(rerank["validation_share"]), seed)
    data = {
        "judgement_set": judgement_set.name,
        "qrels_sha256": sha256_file(judgement_set / "qrels.txt"),
        "queries_sha256": sha256_file(benchmark / "queries.jsonl"),
        "knowledge_sha256": knowledge_checksum(Path(rerank["knowledge"])),
        "families_sha256": sha256_file(families_csv),
        "held_out_benchmarks": [Path(p).name for p in rerank.get("held_out", [])],
        "held_out_families": len(held_out),
        "hard_negatives": hard,
        "hard_depth": depth if hard > 0 else None,
        "pairs": {
            "judgement": sum(p.source == "judgement" for p in pairs),
            "knowledge": sum(p.source == "knowledge" for p in pairs),
        },
        "query_families": {
            "train": len({p.family for p in train}),
            "validation": len({p.family for p in validation}),
        },
    }
    return TrainingSet(train, validation, data)
