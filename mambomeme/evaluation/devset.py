"""Assemble a dev benchmark from blind writers' files (QUERY-WRITING.md, issue 31).

Each writer's `queries.jsonl` (checked by evaluation/writing.check_file) becomes part of one
FORMAT.md folder: `queries.jsonl` (the benchmark's fields only), `exact-targets.jsonl`,
`pool.yaml` (gold and hard negatives per query), `writing.jsonl` (who wrote each query, the
rationale and the no-match audit, kept for review) and the no-match audit `AUDIT.md`, a
corpus-wide lexical count over every canonical field of every item (knowledge-joined fields
included), the first half of the seed's audit; the annotators' pass is the second.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from mambomeme.corpus.normalise import normalise
from mambomeme.corpus.schema import ALL_FIELDS, Item
from mambomeme.errors import BenchmarkError
from mambomeme.evaluation.overlap import content_words
from mambomeme.evaluation.writing import QUERY_FIELDS, read_jsonl


def read_writer_file(path: Path, writer: str) -> list[dict[str, Any]]:
    """A writer's queries.jsonl, each row marked with who wrote it."""
    return [{**row, "writer": writer} for row in read_jsonl(path)]


def query_line(row: Mapping[str, Any]) -> str:
    """The benchmark's own fields of a writer's row, in FORMAT.md order (empty ones omitted)."""
    out = {k: row[k] for k in QUERY_FIELDS if k in row and row[k] not in ([], {}, None)}
    out.setdefault("subsets", [])
    out["subsets"] = list(row.get("subsets", []))
    return json.dumps(out, ensure_ascii=False)


def pool_config(rows: Sequence[Mapping[str, Any]], seeds: Mapping[str, int]) -> dict[str, Any]:
    gold = {}
    for row in rows:
        exact = {i for group in row.get("exact_targets", []) for i in group}
        extra = [i for i in row.get("gold", []) if i not in exact]
        if extra:
            gold[row["qid"]] = extra
    return {
        "systems": ["bm25", "bm25+typo", "dense", "hybrid", "hybrid+rerank"],
        "depth": 10,
        "annotators": dict(seeds),
        "exact_targets": "exact-targets.jsonl",
        "families": "../shared/benchmark/families.csv",
        "partition": "dev",
        "gold": gold,
        "hard_negatives": {
            r["qid"]: list(r["hard_negatives"]) for r in rows if r.get("hard_negatives")
        },
        "earlier_rounds": ["pool-shipped.tsv"],
    }


def _haystack(item: Item) -> str:
    parts = []
    for name in ALL_FIELDS:
        value = getattr(item, name)
        parts.append(" ".join(value) if isinstance(value, tuple) else str(value))
    return normalise(" \n ".join(parts)).casefold()


def _count(pattern: re.Pattern[str], texts: Iterable[str]) -> int:
    return sum(1 for text in texts if pattern.search(text))


def _whole(term: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)" + re.escape(term) + r"(?!\w)")


def nomatch_audit(rows: Sequence[Mapping[str, Any]], items: Mapping[str, Item]) -> str:
    """AUDIT.md: for every no-match query, the whole-word item counts of its full text and of
    each content word, over every canonical field of every item (counts only: no item of a
    hidden family is named). A phrase count above 0 is flagged for review."""
    texts = [_haystack(item) for item in items.values()]
    digest = hashlib.sha256("\n".join(sorted(items)).encode()).hexdigest()
    lines = [
        "# No-match audit, dev-v3 (corpus memes-10k@v1)",
        "",
        f"{len(texts)} items (sha256 of the sorted ids `{digest}`). Every canonical field of every",
        "item (`mambomeme.corpus.schema.ALL_FIELDS`, knowledge-joined fields included), normalised",
        "and casefolded; whole-word matches counted per item. The writers' own audits (searched",
        "terms and reasons, in `writing.jsonl`) come first; this is the repository's re-count.",
        "Second half of the audit: both annotators grade every pooled candidate of these queries,",
        "and a query with any final grade >= 2 is dropped before the set is frozen.",
        "",
        "| qid | query | phrase | content words (items holding each) | flag |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        if row.get("answerable"):
            continue
        text = normalise(str(row["text"])).casefold()
        phrase = _count(_whole(text), texts)
        words = sorted(content_words(text))
        counts = ", ".join(f"`{w}` {_count(_whole(w), texts)}" for w in words)
        flag = "phrase present: review" if phrase else ""
        lines.append(f"| {row['qid']} | {row['text']} | {phrase} | {counts} | {flag} |")
    return "\n".join(lines) + "\n"


def assemble(
    rows: Sequence[Mapping[str, Any]],
    out: Path,
    info: Mapping[str, Any],
    seeds: Mapping[str, int],
    split: Mapping[str, Any],
    items: Mapping[str, Item],
) -> None:
    """Write the benchmark folder `out` (refused if it already holds queries.jsonl)."""
    out = Path(out)
    if (out / "queries.jsonl").exists():
        raise BenchmarkError(f"{out}: already holds a benchmark; never overwritten")
    qids = [r["qid"] for r in rows]
    if len(set(qids)) != len(qids):
        raise BenchmarkError("writers' files repeat a qid")
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "queries.jsonl": "".join(query_line(r) + "\n" for r in rows),
        "exact-targets.jsonl": "".join(
            json.dumps({"qid": r["qid"], "groups": r["exact_targets"]}) + "\n"
            for r in rows
            if r.get("exact_targets")
        ),
        "pool.yaml": "# Pool config for dev-v3 (benchmarks/dev-v3/README.md), written by\n"
        "# scripts/assemble_devset.py from the writers' files.\n"
        + yaml.safe_dump(pool_config(rows, seeds), sort_keys=False, width=100),
        "writing.jsonl": "".join(
            json.dumps(
                {k: r[k] for k in ("qid", "writer", "rationale", "audit", "gold") if k in r},
                ensure_ascii=False,
            )
            + "\n"
            for r in rows
        ),
        "benchmark.json": json.dumps(dict(info), indent=2) + "\n",
        "split.yaml": yaml.safe_dump(dict(split), sort_keys=False),
        "AUDIT.md": nomatch_audit(rows, items),
    }
    for name, text in files.items():
        (out / name).write_text(text, encoding="utf-8")
