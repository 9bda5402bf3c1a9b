"""Blind annotator exports: one folder per annotator with the same candidates in its own order.

    <pool>/<annotator>/sheet.csv            for spreadsheets: fill `grade` and `safety`
    <pool>/<annotator>/sheet.html           self-contained, for reading (thumbnails as data URIs)
    <pool>/<annotator>/labelstudio.json     Label Studio tasks, with labelstudio.xml (config)
    <pool>/<annotator>/assignment.json      the (qid, item_id) pairs asked, in sheet order

Blind: no system name, rank, score or pool source appears in any of them; the order comes from
`pooling.annotator_order` with the annotator's seed. Each file prints the grade scale and the
safety classes (annotations.instructions). Nothing here overwrites an existing file.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mambomeme.corpus.schema import Item
from mambomeme.errors import BenchmarkError
from mambomeme.evaluation.annotations import (
    GRADE_SCALE,
    SAFETY,
    instructions,
    write_new,
)
from mambomeme.evaluation.benchmark import Query
from mambomeme.evaluation.pooling import Candidate

THUMBNAIL_PX = 200
SHEET_COLUMNS = (
    "row",
    "qid",
    "query",
    "also",
    "filters",
    "item_id",
    "kind",
    "title",
    "template",
    "text",
    "description",
    "meaning",
    "preview",
    "grade",
    "safety",
    "note",
)
EXPORT_FILES = ("sheet.csv", "sheet.html", "labelstudio.json", "labelstudio.xml", "assignment.json")


@dataclass(frozen=True)
class SheetRow:
    row: int
    query: Query
    item: Item
    preview_path: str  # absolute path of the preview file, "" when there is none on disk


def sheet_rows(
    ordered: Sequence[Candidate],
    queries: Mapping[str, Query],
    items: Mapping[str, Item],
    preview_of: Callable[[Item], Path | None],
) -> list[SheetRow]:
    rows = []
    for number, c in enumerate(ordered, 1):
        if c.item_id not in items:
            raise BenchmarkError(f"pool row {number}: item {c.item_id!r} is not in the corpus")
        item = items[c.item_id]
        path = preview_of(item)
        rows.append(SheetRow(number, queries[c.qid], item, str(path) if path else ""))
    return rows


def _filters(q: Query) -> str:
    return "; ".join(f"{k}={v}" for k, v in q.filters)


def sheet_csv(rows: Sequence[SheetRow]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for line in instructions():
        writer.writerow([f"# {line}"])
    writer.writerow(["# Fill the grade and safety columns; keep qid and item_id as they are."])
    writer.writerow(SHEET_COLUMNS)
    for r in rows:
        i = r.item
        writer.writerow(
            [
                r.row,
                r.query.qid,
                r.query.text,
                " | ".join(r.query.cues),
                _filters(r.query),
                i.id,
                i.kind,
                i.title,
                i.template,
                i.ocr_text,
                i.visual_description,
                i.meaning,
                r.preview_path,
                "",
                "",
                "",
            ]
        )
    return out.getvalue()


def thumbnail_uri(path: str) -> str:
    """A JPEG thumbnail (longest side THUMBNAIL_PX) as a data URI; "" if it cannot be read."""
    if not path:
        return ""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as image:
            image.thumbnail((THUMBNAIL_PX, THUMBNAIL_PX))
            buffer = io.BytesIO()
            image.convert("RGB").save(buffer, "JPEG", quality=70)
    except (OSError, UnidentifiedImageError, ValueError):
        return ""
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


_CSS = """body{font-family:sans-serif;max-width:70em;margin:auto}
table{border-collapse:collapse;width:100%}
td{border-top:1px solid #ccc;vertical-align:top;padding:6px}
.q{background:#eef;padding:8px;margin-top:2em}.t{white-space:pre-wrap}.m{color:#555;font-size:90%}
img{max-width:200px;max-height:200px}"""


def sheet_html(annotator: str, rows: Sequence[SheetRow]) -> str:
    e = html.escape
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{e(annotator)}</title>",
        f"<style>{_CSS}</style></head><body><h1>Annotation sheet: {e(annotator)}</h1>",
        "<pre>" + e("\n".join(instructions())) + "</pre>",
        "<p>Write the grades in sheet.csv (this page is for reading). Row numbers match.</p>",
    ]
    current = ""
    for r in rows:
        q, i = r.query, r.item
        if q.qid != current:
            if current:
                parts.append("</table>")
            current = q.qid
            also = f" <span class='m'>also: {e(' | '.join(q.cues))}</span>" if q.cues else ""
            filt = f" <span class='m'>filters: {e(_filters(q))}</span>" if q.filters else ""
            parts.append(
                f"<div class='q' id='{e(q.qid)}'><b>{e(q.qid)}</b>: "
                f"&ldquo;{e(q.text)}&rdquo;{also}{filt}</div><table>"
            )
        uri = thumbnail_uri(r.preview_path)
        image = f"<img src='{uri}' alt='preview'>" if uri else "<i>no preview</i>"
        fields = "".join(
            f"<div><span class='m'>{name}:</span> <span class='t'>{e(value)}</span></div>"
            for name, value in (
                ("text", i.ocr_text),
                ("description", i.visual_description),
                ("meaning", i.meaning),
            )
            if value.strip()
        )
        parts.append(
            f"<tr><td>#{r.row}</td><td>{image}</td><td><b>{e(i.title)}</b> "
            f"<span class='m'>{e(i.kind)} &middot; template {e(i.template)} &middot; "
            f"{e(i.id)}</span>{fields}</td></tr>"
        )
    if current:
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def labelstudio_tasks(rows: Sequence[SheetRow]) -> str:
    guide = "\n".join(instructions())
    tasks = []
    for r in rows:
        i = r.item
        tasks.append(
            {
                "data": {
                    "row": r.row,
                    "qid": r.query.qid,
                    "query": r.query.text,
                    "also": " | ".join(r.query.cues),
                    "filters": _filters(r.query),
                    "item_id": i.id,
                    "title": i.title,
                    "kind": i.kind,
                    "template": i.template,
                    "text": "\n".join(
                        x for x in (i.ocr_text, i.visual_description, i.meaning) if x
                    ),
                    "preview": r.preview_path,
                    "guide": guide,
                }
            }
        )
    return json.dumps(tasks, ensure_ascii=False, indent=1) + "\n"


def labelstudio_config() -> str:
    e = html.escape
    grades = "".join(f'    <Choice value="{g} {e(text)}"/>\n' for g, text in GRADE_SCALE)
    safety = "".join(f'    <Choice value="{s}"/>\n' for s in SAFETY)
    return (
        "<View>\n"
        '  <Header value="$qid: $query"/>\n  <Text name="also" value="$also"/>\n'
        '  <Text name="title" value="$title"/>\n  <Text name="text" value="$text"/>\n'
        '  <Text name="guide" value="$guide"/>\n'
        '  <Choices name="grade" toName="title" choice="single" required="true">\n'
        f"{grades}  </Choices>\n"
        '  <Choices name="safety" toName="title" choice="single" required="true">\n'
        f"{safety}  </Choices>\n</View>\n"
    )


def write_exports(folder: Path, annotator: str, seed: int, rows: Sequence[SheetRow]) -> list[Path]:
    """Write every export file of one annotator; refuses if any of them exists."""
    folder = Path(folder)
    for name in EXPORT_FILES:
        if (folder / name).exists():
            raise BenchmarkError(f"{folder / name} exists; a new pool is a new folder")
    assignment = {
        "annotator": annotator,
        "seed": seed,
        "pairs": [[r.query.qid, r.item.id] for r in rows],
    }
    contents = {
        "sheet.csv": sheet_csv(rows),
        "sheet.html": sheet_html(annotator, rows),
        "labelstudio.json": labelstudio_tasks(rows),
        "labelstudio.xml": labelstudio_config(),
        "assignment.json": json.dumps(assignment, indent=1) + "\n",
    }
    for name, text in contents.items():
        write_new(folder / name, text)
    return [folder / name for name in EXPORT_FILES]
