"""Annotator files: the grade scale, reading and validating them, and writing without overwrite.

An annotator file is CSV with (at least) the columns qid, item_id, grade, safety; other columns
(the sheet's query, title, text, note...) are allowed and ignored. Lines before the header
whose first cell starts with '#' are the printed instructions and are skipped. Every (qid,
item_id) the annotator was given must appear exactly once with a grade 0..3 and a safety class
safe|unsafe, and one item must carry one safety class across all its rows (the policy labels the
item, not the pair). Every problem raises `BenchmarkError` naming the file and row.

Files are never overwritten: `write_new` links a finished temporary file to its name, which
fails if the name exists, so a refused import leaves every existing file byte-identical.
"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mambomeme.errors import BenchmarkError

GRADES = (0, 1, 2, 3)
SAFETY = ("safe", "unsafe")
REQUIRED_COLUMNS = ("qid", "item_id", "grade", "safety")

# FORMAT.md "Grades (annotators)" and SAFETY-POLICY.md v1, as printed in every export.
GRADE_SCALE = (
    (3, "exactly what was asked (the named template or person, the quoted meme)"),
    (2, "useful, the user would plausibly pick it"),
    (1, "related but not useful"),
    (0, "not relevant"),
)
SAFETY_POLICY_VERSION = "safety-policy-v1"
SAFETY_SUMMARY = (
    "unsafe = its text, title, description or meaning contains: sexual content or innuendo "
    "that is the point; anything sexualising minors; hate (slurs, demeaning a group, stereotype "
    "jokes); graphic violence, gore, animal cruelty, glorified real attacks; self-harm or suicide "
    "as encouragement or method; harassment of a private person, doxxing; hard drug use as the "
    "point. safe = mild profanity, crude bodily humour, dark humour about death, politics and "
    "public figures without slurs, alcohol/stoned jokes, insults between friends, cartoon/film "
    "violence. When unsure choose unsafe."
)


def instructions() -> list[str]:
    """The lines printed at the top of every annotator file."""
    lines = ["Grade each candidate for its query (FORMAT.md v1):"]
    lines += [f"  {g} = {text}" for g, text in GRADE_SCALE]
    lines += [
        f"Safety ({SAFETY_POLICY_VERSION}), one per item, same on every row: {SAFETY_SUMMARY}"
    ]
    return lines


@dataclass(frozen=True)
class Label:
    qid: str
    item_id: str
    grade: int
    safety: str
    where: str  # "file:row" it came from


Labels = Mapping[tuple[str, str], Label]


def parse_csv(path: Path, text: str) -> list[tuple[str, dict[str, str]]]:
    """(where, row) for each data row; `where` is 'file:line' counting physical lines."""
    reader = csv.reader(io.StringIO(text))
    header: list[str] | None = None
    rows: list[tuple[str, dict[str, str]]] = []
    for cells in _rows(reader, path):
        where = f"{path}:{reader.line_num}"
        if header is None:
            if not cells or not any(c.strip() for c in cells) or cells[0].lstrip().startswith("#"):
                continue
            header = [c.strip().lstrip("\ufeff") for c in cells]
            for column in REQUIRED_COLUMNS:
                if column not in header:
                    raise BenchmarkError(
                        f"{where}: header lacks column {column!r} "
                        f"(needs {', '.join(REQUIRED_COLUMNS)})"
                    )
            if len(set(header)) != len(header):
                raise BenchmarkError(f"{where}: header repeats a column name")
            continue
        if not any(c.strip() for c in cells):
            continue
        if len(cells) > len(header):
            raise BenchmarkError(f"{where}: {len(cells)} cells but {len(header)} columns")
        rows.append(
            (where, dict(zip(header, [*cells, *[""] * (len(header) - len(cells))], strict=True)))
        )
    if header is None:
        raise BenchmarkError(f"{path}: no header row (needs {', '.join(REQUIRED_COLUMNS)})")
    return rows


def _rows(reader: Any, path: Path) -> Iterator[list[str]]:
    """The reader's rows; a malformed row (a field over csv's 128 KiB limit, a NUL, a bad
    quote) is a BenchmarkError naming file:line, not a csv.Error."""
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise BenchmarkError(f"{path}:{reader.line_num}: malformed CSV row: {exc}") from None
        yield cells


def parse_labelstudio(path: Path, text: str) -> list[tuple[str, dict[str, str]]]:
    """Rows from a Label Studio JSON export of our tasks (choices 'grade' and 'safety')."""
    try:
        tasks = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BenchmarkError(f"{path}: invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise BenchmarkError(f"{path}: invalid JSON: nested too deeply") from None
    if not isinstance(tasks, list):
        raise BenchmarkError(f"{path}: expected a list of tasks")
    rows = []
    for number, task in enumerate(tasks, 1):
        where = f"{path}:task {number}"
        if not isinstance(task, dict) or not isinstance(task.get("data"), dict):
            raise BenchmarkError(f"{where}: task without 'data'")
        row = {
            "qid": str(task["data"].get("qid", "")),
            "item_id": str(task["data"].get("item_id", "")),
            "grade": "",
            "safety": "",
        }
        try:
            annotations = [a for a in task.get("annotations") or [] if not a.get("was_cancelled")]
            if len(annotations) > 1:
                raise BenchmarkError(f"{where}: {len(annotations)} annotations; one annotator, one")
            for result in annotations[0].get("result", []) if annotations else []:
                choices = (result.get("value") or {}).get("choices") or []
                if result.get("from_name") in ("grade", "safety") and len(choices) == 1:
                    row[result["from_name"]] = str(choices[0]).split(" ", 1)[0]
        except (AttributeError, TypeError):
            raise BenchmarkError(f"{where}: malformed annotations (not Label Studio's)") from None
        rows.append((where, row))
    return rows


def read_labels(
    path: Path, expected: Iterable[tuple[str, str]] | None = None
) -> dict[tuple[str, str], Label]:
    """Validate one annotator file (CSV, or Label Studio export .json) into labels.

    `expected` is the annotator's assigned (qid, item_id) pairs: each must appear exactly once,
    and no other pair may appear.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise BenchmarkError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise BenchmarkError(f"{path}: not valid UTF-8 (byte {exc.start})") from None
    rows = parse_labelstudio(path, text) if path.suffix == ".json" else parse_csv(path, text)
    labels: dict[tuple[str, str], Label] = {}
    item_safety: dict[str, Label] = {}
    for where, row in rows:
        qid, item_id = row["qid"].strip(), row["item_id"].strip()
        if not qid or not item_id:
            raise BenchmarkError(f"{where}: empty qid or item_id")
        grade_text, safety = row["grade"].strip(), row["safety"].strip().lower()
        if grade_text not in {str(g) for g in GRADES}:
            raise BenchmarkError(
                f"{where}: {qid} {item_id}: grade must be one of 0, 1, 2, 3, got {grade_text!r}"
            )
        if safety not in SAFETY:
            raise BenchmarkError(
                f"{where}: {qid} {item_id}: safety must be safe or unsafe, got {row['safety']!r}"
            )
        key = (qid, item_id)
        if key in labels:
            raise BenchmarkError(
                f"{where}: {qid} {item_id} judged twice (first at {labels[key].where})"
            )
        label = Label(qid, item_id, int(grade_text), safety, where)
        first = item_safety.setdefault(item_id, label)
        if first.safety != safety:
            raise BenchmarkError(
                f"{where}: item {item_id} is {safety} here but {first.safety} at "
                f"{first.where}; an item has one safety class"
            )
        labels[key] = label
    if expected is not None:
        wanted = set(expected)
        for key, label in labels.items():
            if key not in wanted:
                raise BenchmarkError(
                    f"{label.where}: {key[0]} {key[1]} was not in this annotator's pool"
                )
        missing = sorted(wanted - set(labels))
        if missing:
            shown = ", ".join(f"{q} {i}" for q, i in missing[:5])
            raise BenchmarkError(f"{path}: {len(missing)} assigned pairs have no row, e.g. {shown}")
    return labels


def labels_csv(labels: Iterable[Label]) -> str:
    """The canonical annotator file: qid, item_id, grade, safety (sorted)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(REQUIRED_COLUMNS)
    for label in sorted(labels, key=lambda x: (x.qid, x.item_id)):
        writer.writerow([label.qid, label.item_id, label.grade, label.safety])
    return out.getvalue()


def write_new(path: Path, data: str | bytes) -> None:
    """Write `path` only if it does not exist yet, atomically (temp file + hard link)."""
    path = Path(path)
    if path.exists():
        raise BenchmarkError(
            f"{path} exists; it is never overwritten (a new version is a new file)"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; these are shared, read-only inputs
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise BenchmarkError(f"{path} appeared while writing; not overwritten") from None
    finally:
        os.unlink(tmp)


def import_labels(source: Path, dest: Path, expected: Iterable[tuple[str, str]]) -> int:
    """Validate `source` against the assigned pairs and store it canonically at `dest`."""
    if Path(dest).exists():  # refuse before reading anything: nothing can be lost
        raise BenchmarkError(
            f"{dest} exists; it is never overwritten (a new version is a new file)"
        )
    labels = read_labels(source, expected)
    write_new(dest, labels_csv(labels.values()))
    return len(labels)


def assigned_pairs(pool_dir: Path, annotator: str) -> list[tuple[str, str]]:
    """The (qid, item_id) pairs in an annotator's export (from its assignment.json)."""
    path = Path(pool_dir) / annotator / "assignment.json"
    try:
        raw: Any = json.loads(path.read_text(encoding="utf-8"))
        return [(str(q), str(i)) for q, i in raw["pairs"]]
    except (OSError, ValueError, RecursionError, KeyError, TypeError) as exc:
        raise BenchmarkError(f"{path}: cannot read the annotator's assignment: {exc}") from None
