"""Query writing blind to our own text (QUERY-WRITING.md, issue 31): the writer's packet and the
check of a writer's file.

A writer sees the corpus only as the public data presents it: `render` keeps the source's own
fields (title, aliases, template name, caption, MemeCap's literal description and meaning) and
never the knowledge base joined at ingest, built documents or any score. `check_file` validates
a writer's `queries.jsonl` against its packet and returns every problem (record and field named),
so the writer can fix them all in one pass.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from mambomeme.corpus.sources.base import RawRecord
from mambomeme.errors import BenchmarkError
from mambomeme.evaluation.benchmark import SLICES, SUBSETS
from mambomeme.evaluation.overlap import shared_words
from mambomeme.evaluation.pooling import item_family

FILTER_KEYS = ("kind", "language", "template")
# Fields a writer's line may hold: the benchmark's query fields plus what becomes pool.yaml
# (gold, hard negatives), exact-targets.jsonl (exact_targets) and the audit trail.
QUERY_FIELDS = ("qid", "family", "slice", "text", "cues", "filters", "subsets", "answerable")
WRITER_FIELDS = QUERY_FIELDS + ("gold", "exact_targets", "hard_negatives", "rationale", "audit")
MAX_PER_TEMPLATE = 3


class Rendered(NamedTuple):
    """One corpus item as a writer sees it."""

    id: str
    kind: str
    source: str
    family: str
    partition: str
    title: str
    aliases: tuple[str, ...]
    template: str
    text: str  # caption / OCR text
    description: str  # MemeCap's literal image description
    meaning: str  # MemeCap's meaning
    image: str  # the source's picture on disk ("" when the source ships none)


def render(records: Iterable[RawRecord], partitions: Mapping[str, str]) -> Iterator[Rendered]:
    """The public rendering of every raw source record; an unreadable record is an error here
    (the writer must see the whole corpus, not a silently shorter one)."""
    for raw in records:
        if raw.record is None:
            raise BenchmarkError(f"{raw.where}: unreadable corpus record: {raw.error}")
        record = raw.record
        family = item_family(str(record["template_group"]))
        if family not in partitions:
            raise BenchmarkError(f"{raw.where}: family {family!r} is not in families.csv")
        source = str(record["id"]).split(":", 1)[0]
        yield Rendered(
            id=str(record["id"]),
            kind=str(record["kind"]),
            source=source,
            family=family,
            partition=partitions[family],
            title=str(record["title"]),
            aliases=tuple(str(a) for a in record.get("aliases") or ()),
            template=str(record.get("template") or ""),
            text=str(record.get("ocr_text") or ""),
            description=str(record.get("visual_description") or "") if source == "memecap" else "",
            meaning=str(record.get("meaning") or "") if source == "memecap" else "",
            image=_image(record),
        )


def _image(record: Mapping[str, Any]) -> str:
    preview = str(record.get("preview") or "")
    return preview if preview and Path(preview).is_file() else ""


def to_json(item: Rendered) -> str:
    row = item._asdict()
    row["aliases"] = list(item.aliases)
    return json.dumps(row, ensure_ascii=False)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """One JSON object a line, split on "\\n" only (a caption may hold U+2028, which
    str.splitlines would split on); an invalid line is an error naming it."""
    rows: list[dict[str, Any]] = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").split("\n"), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise BenchmarkError(f"{path}:{number}: invalid JSON: {exc.msg}") from None
    return rows


def read_rendered(path: Path) -> dict[str, dict[str, Any]]:
    """A packet's corpus file: item id -> rendered row."""
    return {str(row["id"]): row for row in read_jsonl(path)}


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v.strip() for v in value)


def check_line(row: Mapping[str, Any], targets: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Problems of one writer line (empty when it is fine)."""
    problems: list[str] = []
    unknown = sorted(set(row) - set(WRITER_FIELDS))
    if unknown:
        problems.append(f"unknown fields {unknown}")
    for name in ("qid", "family", "slice", "text", "rationale"):
        if not isinstance(row.get(name), str) or not str(row.get(name)).strip():
            problems.append(f"field {name!r} missing or empty")
    if row.get("slice") not in SLICES:
        problems.append(f"slice must be one of {SLICES}")
    if not isinstance(row.get("answerable"), bool):
        problems.append("field 'answerable' must be true or false")
    cues = row.get("cues", [])
    if not _strings(cues):
        problems.append("'cues' must be a list of non-empty strings")
        cues = []
    subsets = row.get("subsets", [])
    if not isinstance(subsets, list) or not set(subsets) <= set(SUBSETS):
        problems.append(f"'subsets' must be a list drawn from {SUBSETS}")
        subsets = []
    if bool(cues) != ("multi_cue" in subsets):
        problems.append("a query has cues exactly when its subsets hold 'multi_cue'")
    filters = row.get("filters", {})
    if not isinstance(filters, dict) or not set(filters) <= set(FILTER_KEYS):
        problems.append(f"'filters' must be an object with keys from {FILTER_KEYS}")
        filters = {}
    if bool(filters) != ("filter" in subsets):
        problems.append("a query has filters exactly when its subsets hold 'filter'")
    ids: list[str] = []
    for name in ("gold", "hard_negatives"):
        value = row.get(name, [])
        if not _strings(value):
            problems.append(f"{name!r} must be a list of item ids")
        else:
            ids += value
    exact = row.get("exact_targets", [])
    if not isinstance(exact, list) or not all(_strings(g) and g for g in exact):
        problems.append("'exact_targets' must be a list of non-empty lists of item ids")
        exact = []
    ids += [i for group in exact for i in group]
    for item_id in ids:
        if item_id not in targets:
            problems.append(f"item {item_id!r} is not a dev item of corpus-targets.jsonl")
    if problems:
        return problems
    family = str(row["family"])
    if not any(targets[i]["family"] == family for i in ids) and row["answerable"]:
        problems.append(f"family {family!r} is not the family of any of its gold items")
    gold = list(row.get("gold", []))
    if row["answerable"]:
        if len(gold) < 2:
            problems.append("an answerable query needs at least 2 gold items")
        if row["slice"] in ("entity", "quote") and not exact:
            problems.append("an answerable entity or quote query needs exact_targets")
        for kind in [filters.get("kind")] if filters.get("kind") else []:
            wrong = [i for i in gold if targets[i]["kind"] != kind]
            if wrong:
                problems.append(f"filter kind={kind} but gold items {wrong} are not {kind}s")
        if row["slice"] == "concept":
            texts = [str(targets[i][f]) for i in gold for f in ("title", "template", "text")]
            overlap = shared_words([str(row["text"]), *cues], texts)
            if overlap:
                problems.append(
                    f"concept query shares content words {sorted(overlap)} with its targets' "
                    "title, template name or caption: rewrite it"
                )
    else:
        if gold or exact:
            problems.append("a no-match query has no gold items or exact_targets")
        if not isinstance(row.get("audit"), str) or len(str(row.get("audit"))) < 40:
            problems.append(
                "a no-match query needs an 'audit' (what was searched, and why no item fits)"
            )
    return problems


def check_file(
    path: Path, targets: Mapping[str, Mapping[str, Any]], avoid: Iterable[str]
) -> list[str]:
    """Every problem of a writer's queries.jsonl, each naming its line."""
    problems: list[str] = []
    seen: set[str] = set()
    avoided = {" ".join(t.casefold().split()) for t in avoid}
    per_template: Counter[str] = Counter()
    lines = Path(path).read_text(encoding="utf-8").split("\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{where}: invalid JSON: {exc.msg}")
            continue
        if not isinstance(row, dict):
            problems.append(f"{where}: not a JSON object")
            continue
        qid = str(row.get("qid", ""))
        if qid in seen:
            problems.append(f"{where}: qid {qid!r} repeated")
        seen.add(qid)
        problems += [f"{where} ({qid}): {p}" for p in check_line(row, targets)]
        if " ".join(str(row.get("text", "")).casefold().split()) in avoided:
            problems.append(f"{where} ({qid}): text repeats an earlier version's query")
        if row.get("answerable") is True:
            per_template[str(row.get("family"))] += 1
    for family, count in per_template.items():
        if family.startswith("template:") and count > MAX_PER_TEMPLATE:
            problems.append(
                f"{path}: family {family} is targeted {count} times (at most {MAX_PER_TEMPLATE})"
            )
    return problems


def counts(path: Path) -> dict[str, Counter[str]]:
    """Per slice: answerable, no-match and subset counts of a writer's file."""
    out: dict[str, Counter[str]] = {}
    for line in Path(path).read_text(encoding="utf-8").split("\n"):
        if not line.strip():
            continue
        row = json.loads(line)
        tally = out.setdefault(str(row.get("slice")), Counter())
        tally["answerable" if row.get("answerable") else "no-match"] += 1
        for subset in row.get("subsets", []):
            tally[subset] += 1
    return out
