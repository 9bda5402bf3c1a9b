"""The labelled safety set: a dev-only sample, blind annotator sheets, their import, and the
frozen, versioned label files the safety model is trained from.

Flow (docs/safety-labels.md):
  sample   items of families marked `dev` only (benchmark hygiene), stratified by template
           family and source, plus every item the rules flag -> `pools/safety-<v>/<annotator>/`
  label    two blind passes (annotator-a, annotator-b) write `item_id,safety,category,note`
  queue    the items they disagree on go to annotator-c, blind
  freeze   `safety/labels/<v>/labels.tsv` (+ agreement.json, manifest.json), never overwritten

The sheets hold corpus text and live under the git-ignored `pools/`; label files hold ids,
classes and categories only.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mambomeme.corpus.schema import Item
from mambomeme.errors import BenchmarkError
from mambomeme.evaluation.pooling import item_family as item_family  # re-exported

CATEGORIES = ("1", "2", "3", "4", "5", "6", "7")  # SAFETY-POLICY.md v1, in its order
CATEGORY_NAMES = {
    "1": "sexual",
    "2": "minors",
    "3": "hate",
    "4": "violence",
    "5": "self-harm",
    "6": "harassment",
    "7": "hard drugs",
}
SPLITS = ("train", "validation", "test")
SHEET_COLUMNS = (
    "item_id",
    "source",
    "template",
    "title",
    "text",
    "meaning",
    "description",
    "safety",
    "category",
    "note",
)
LABEL_COLUMNS = ("item_id", "safety", "category", "note")
MAX_FIELD = 1 << 20  # csv field bound for label files (python's default is 128 KiB)


@dataclass(frozen=True)
class SafetyLabel:
    item_id: str
    safety: str  # safe | unsafe
    category: str  # "" for safe, else one of CATEGORIES
    note: str = ""


def item_families(items_parquet: Path) -> dict[str, str]:
    """item id -> family, from a corpus build's items.parquet."""
    import pyarrow.parquet as pq

    table = pq.read_table(items_parquet, columns=["id", "template_group"]).to_pydict()
    return {i: item_family(g) for i, g in zip(table["id"], table["template_group"], strict=True)}


def source_of(item_id: str) -> str:
    return item_id.split(":", 1)[0]


def _key(seed: int, text: str) -> str:
    return hashlib.sha256(f"{seed}:{text}".encode()).hexdigest()


def draw_sample(
    items: Sequence[Item],
    partitions: Mapping[str, str],
    flagged: Iterable[str],
    size: int,
    seed: int,
) -> list[str]:
    """Item ids of dev families only: every flagged item, every item of a small family (so
    every dev template, memegen template and MemeCap post is represented), then an equal
    share of each large template family's items until `size` (deterministic for `seed`)."""
    dev = [it for it in items if partitions.get(item_family(it.template_group)) == "dev"]
    dev_ids = {it.id for it in dev}
    chosen = {i for i in flagged if i in dev_ids}
    by_family: dict[str, list[str]] = {}
    for it in dev:
        by_family.setdefault(item_family(it.template_group), []).append(it.id)
    for ids in by_family.values():
        ids.sort(key=lambda i: _key(seed, i))
        if len(ids) <= 3:
            chosen.update(ids)
        else:
            chosen.update(i for i in ids if not i.startswith("imgflip:"))  # templates, memegen
    large = sorted(f for f, ids in by_family.items() if len(ids) > 3)
    cursors = dict.fromkeys(large, 0)
    while len(chosen) < min(size, len(dev)):
        progressed = False
        for family in large:
            ids = by_family[family]
            while cursors[family] < len(ids) and ids[cursors[family]] in chosen:
                cursors[family] += 1
            if cursors[family] < len(ids) and len(chosen) < size:
                chosen.add(ids[cursors[family]])
                cursors[family] += 1
                progressed = True
        if not progressed:
            break
    return sorted(chosen)


def family_split(family: str, seed: int, shares: tuple[float, float] = (0.6, 0.8)) -> str:
    """Whole families go to one split: train (60%), validation (20%) or test (20%)."""
    u = int(_key(seed, family)[:8], 16) / 0xFFFFFFFF
    return SPLITS[0] if u < shares[0] else SPLITS[1] if u < shares[1] else SPLITS[2]


def sheet_csv(items: Sequence[Item]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(SHEET_COLUMNS)
    for it in items:
        writer.writerow(
            [
                it.id,
                source_of(it.id),
                it.template,
                it.title,
                it.ocr_text,
                it.meaning,
                it.visual_description,
                "",
                "",
                "",
            ]
        )
    return out.getvalue()


def chunks(ids: Sequence[str], parts: int, seed: int) -> list[list[str]]:
    """`ids` shuffled by `seed` and cut into `parts` near-equal sheets (one per session)."""
    order = sorted(ids, key=lambda i: _key(seed, i))
    return [sorted(order[p::parts]) for p in range(parts)]


def read_label_file(path: Path, expected: Iterable[str]) -> dict[str, SafetyLabel]:
    """One annotator's labels; every expected id exactly once, each row valid, else a
    BenchmarkError naming the file and row."""
    csv.field_size_limit(MAX_FIELD)
    wanted = set(expected)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BenchmarkError(f"{path}: cannot read labels: {exc}") from None
    lines = [ln for ln in text.splitlines(keepends=True) if not ln.startswith("#")]
    reader = csv.DictReader(io.StringIO("".join(lines)))
    missing = [c for c in ("item_id", "safety", "category") if c not in (reader.fieldnames or [])]
    if missing:
        raise BenchmarkError(f"{path}: missing column(s) {', '.join(missing)}")
    labels: dict[str, SafetyLabel] = {}
    try:
        rows = list(reader)
    except csv.Error as exc:
        raise BenchmarkError(f"{path}: not valid CSV: {exc}") from None
    for number, row in enumerate(rows, start=2):
        where = f"{path}: row {number}"
        item_id = (row.get("item_id") or "").strip()
        safety = (row.get("safety") or "").strip().lower()
        category = (row.get("category") or "").strip()
        if item_id not in wanted:
            raise BenchmarkError(f"{where}: item {item_id!r} is not in this sheet")
        if item_id in labels:
            raise BenchmarkError(f"{where}: item {item_id!r} labelled twice")
        if safety not in ("safe", "unsafe"):
            raise BenchmarkError(f"{where}: safety must be safe or unsafe, got {safety!r}")
        if safety == "unsafe" and category not in CATEGORIES:
            raise BenchmarkError(f"{where}: an unsafe item needs a category 1-7, got {category!r}")
        if safety == "safe":
            category = ""
        labels[item_id] = SafetyLabel(item_id, safety, category, (row.get("note") or "").strip())
    absent = sorted(wanted - set(labels))
    if absent:
        raise BenchmarkError(f"{path}: {len(absent)} item(s) unlabelled, first {absent[0]!r}")
    return labels


def labels_csv(labels: Iterable[SafetyLabel]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(LABEL_COLUMNS)
    for lab in sorted(labels, key=lambda x: x.item_id):
        writer.writerow([lab.item_id, lab.safety, lab.category, lab.note])
    return out.getvalue()


def disagreements(a: Mapping[str, SafetyLabel], b: Mapping[str, SafetyLabel]) -> list[str]:
    """Ids the two passes classed differently (safe vs unsafe); category differences on two
    unsafe labels are settled by the more severe one, not by a third pass."""
    return sorted(i for i in a if i in b and a[i].safety != b[i].safety)


def severe(first: str, second: str) -> str:
    """The more severe of two categories: 2 (minors) first, then the lowest number."""
    cats = [c for c in (first, second) if c]
    if not cats:
        return ""
    return "2" if "2" in cats else min(cats)


def cohen_kappa(a: Sequence[str], b: Sequence[str]) -> float | None:
    """Cohen's kappa of two label sequences (None when chance agreement is 1)."""
    if not a:
        return None
    classes = sorted(set(a) | set(b))
    n = len(a)
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    chance = sum((a.count(c) / n) * (b.count(c) / n) for c in classes)
    return None if chance >= 1.0 else (observed - chance) / (1.0 - chance)


def finalise(
    a: Mapping[str, SafetyLabel],
    b: Mapping[str, SafetyLabel],
    c: Mapping[str, SafetyLabel],
) -> dict[str, SafetyLabel]:
    """Agreed items keep their class (category: the more severe); disputed ones take the
    third annotator's label. A disputed item without a third label is an error."""
    if set(a) != set(b):
        raise BenchmarkError("annotator-a and annotator-b labelled different items")
    final: dict[str, SafetyLabel] = {}
    for item_id in sorted(a):
        x, y = a[item_id], b[item_id]
        if x.safety == y.safety:
            final[item_id] = SafetyLabel(item_id, x.safety, severe(x.category, y.category))
        elif item_id in c:
            z = c[item_id]
            final[item_id] = SafetyLabel(item_id, z.safety, z.category)
        else:
            raise BenchmarkError(f"item {item_id!r} is disputed and annotator-c has no label")
    return final


def agreement(a: Mapping[str, SafetyLabel], b: Mapping[str, SafetyLabel]) -> dict[str, Any]:
    ids = sorted(set(a) & set(b))
    xa = [a[i].safety for i in ids]
    xb = [b[i].safety for i in ids]
    return {
        "items": len(ids),
        "agree": sum(x == y for x, y in zip(xa, xb, strict=True)),
        "kappa": cohen_kappa(xa, xb),
        "unsafe_a": xa.count("unsafe"),
        "unsafe_b": xb.count("unsafe"),
    }


def labels_tsv(final: Mapping[str, SafetyLabel], families: Mapping[str, str], seed: int) -> str:
    """The frozen label file: item_id, safety, category, family, split (by whole family)."""
    lines = ["item_id\tsafety\tcategory\tfamily\tsplit"]
    for item_id in sorted(final):
        lab = final[item_id]
        family = families[item_id]
        lines.append(
            f"{item_id}\t{lab.safety}\t{lab.category}\t{family}\t{family_split(family, seed)}"
        )
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class LabelRow:
    item_id: str
    safety: str
    category: str
    family: str
    split: str


def read_labels_tsv(path: Path) -> list[LabelRow]:
    """A frozen label file back as rows; a malformed row raises naming file and line."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise BenchmarkError(f"{path}: cannot read labels: {exc}") from None
    if not lines or lines[0].split("\t") != ["item_id", "safety", "category", "family", "split"]:
        raise BenchmarkError(f"{path}: line 1: expected the label header")
    rows: list[LabelRow] = []
    seen: set[str] = set()
    for number, line in enumerate(lines[1:], start=2):
        parts = line.split("\t")
        if len(parts) != 5 or parts[1] not in ("safe", "unsafe") or parts[4] not in SPLITS:
            raise BenchmarkError(f"{path}: line {number}: malformed label row")
        if parts[0] in seen:
            raise BenchmarkError(f"{path}: line {number}: item {parts[0]!r} repeated")
        seen.add(parts[0])
        rows.append(LabelRow(*parts))
    return rows


def freeze(folder: Path, files: Mapping[str, str]) -> None:
    """Write a new label version folder; an existing one is never touched."""
    folder = Path(folder)
    if folder.exists():
        raise BenchmarkError(f"{folder} exists; a label version is never overwritten")
    tmp = folder.with_name(f".{folder.name}.tmp")
    if tmp.exists():
        for leftover in tmp.iterdir():
            leftover.unlink()
        tmp.rmdir()
    tmp.mkdir(parents=True)
    for name, text in files.items():
        (tmp / name).write_text(text, encoding="utf-8")
    sums = {name: hashlib.sha256(text.encode()).hexdigest() for name, text in files.items()}
    (tmp / "SHA256SUMS.json").write_text(json.dumps(sums, indent=2, sort_keys=True) + "\n")
    tmp.rename(folder)


def read_round(folder: Path) -> tuple[dict[str, dict[str, SafetyLabel]], dict[str, Any]]:
    """A labelling round's files: `assignment.json` (sheet name -> ids) and one
    `<annotator>-<sheet>.csv` per sheet. Returns labels per annotator pass and the assignment."""
    folder = Path(folder)
    try:
        assignment = json.loads((folder / "assignment.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise BenchmarkError(f"{folder}/assignment.json: cannot read: {exc}") from None
    passes: dict[str, dict[str, SafetyLabel]] = {}
    for sheet, ids in sorted(assignment["sheets"].items()):
        annotator = sheet.rsplit("-part-", 1)[0]
        found = read_label_file(folder / f"{sheet}.csv", ids)
        passes.setdefault(annotator, {}).update(found)
    return passes, assignment


def freeze_round(
    folder: Path,
    out: Path,
    families: Mapping[str, str],
    split_seed: int,
    base: Path | None = None,
) -> dict[str, Any]:
    """Finalise a round (two passes, the third on disagreements) into a new label version;
    with `base` (an earlier version folder) the new version holds its labels too (an item
    labelled in both keeps the earlier label: a round adds items, it never relabels)."""
    passes, assignment = read_round(folder)
    a, b = passes.get("annotator-a", {}), passes.get("annotator-b", {})
    c = passes.get("annotator-c", {})
    disputed = disagreements(a, b)
    if set(c) != set(disputed):
        raise BenchmarkError(
            f"{folder}: annotator-c labelled {len(c)} item(s); the passes disagree on "
            f"{len(disputed)}: the third pass must cover exactly those"
        )
    final = finalise(a, b, c)
    earlier: dict[str, SafetyLabel] = {}
    if base is not None:
        for row in read_labels_tsv(Path(base) / "labels.tsv"):
            earlier[row.item_id] = SafetyLabel(row.item_id, row.safety, row.category)
    round_items = len(final)
    final = {**final, **earlier}
    unknown = sorted(set(final) - set(families))
    if unknown:
        raise BenchmarkError(f"{folder}: item {unknown[0]!r} is not in the corpus")
    stats = agreement(a, b)
    stats["disputed"] = len(disputed)
    stats["third_pass_unsafe"] = sum(c[i].safety == "unsafe" for i in disputed)
    stats["final_unsafe"] = sum(lab.safety == "unsafe" for lab in final.values())
    stats["final_items"] = len(final)
    stats["round_items"] = round_items
    stats["base"] = str(base) if base is not None else None
    sources = sorted(folder.glob("*.csv")) + [folder / "assignment.json"]
    if base is not None:
        sources.append(Path(base) / "labels.tsv")
    manifest = {
        "policy": "safety-v1",
        "corpus": assignment.get("corpus"),
        "sample_seed": assignment.get("seed"),
        "split_seed": split_seed,
        "splits": "whole families: train 60% / validation 20% / test 20% by sha256(seed:family)",
        "inputs": {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sources},
    }
    freeze(
        out,
        {
            "labels.tsv": labels_tsv(final, families, split_seed),
            "agreement.json": json.dumps(stats, indent=2, sort_keys=True) + "\n",
            "manifest.json": json.dumps(manifest, indent=2, sort_keys=True) + "\n",
        },
    )
    return stats
