"""The overlap report (issue 31): how much of each benchmark's wording is our own text.

Per benchmark and primary slice, over answerable queries with known targets:
- knowledge share (evaluation/overlap.py): content words of the query text found in the knowledge
  entry of its targets' template (name, aliases, tags, people, visual_description, meaning,
  typical_use, origin); queries whose targets have no knowledge entry (a MemeCap post) are
  counted apart, not as zero;
- caption share: content words found in the target items' own public text (title, template
  name, caption).
A query's targets are its pool config's gold items and its exact targets (what the writer named
before anything was judged), so the figure does not move with the systems' pools; a query that
names none (most of dev-v1) takes the template items of its query family.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mambomeme.corpus.knowledge import TemplateKnowledge, key
from mambomeme.corpus.schema import Item
from mambomeme.evaluation import pooling
from mambomeme.evaluation.benchmark import SLICES
from mambomeme.evaluation.overlap import share
from mambomeme.evaluation.report import publish

VERSION = "overlap-v1"


def knowledge_text(entry: TemplateKnowledge) -> list[str]:
    return [
        entry.name,
        *entry.aliases,
        *entry.tags,
        *entry.people,
        entry.visual_description,
        entry.meaning,
        entry.typical_use,
        entry.origin,
    ]


def query_targets(benchmark_dir: Path) -> dict[str, list[str]]:
    """qid -> the item ids its writer named (pool.yaml gold and the exact-target groups)."""
    config_path = Path(benchmark_dir) / "pool.yaml"
    targets: dict[str, list[str]] = {}
    if config_path.is_file():
        config = pooling.load_pool_config(config_path)
        for qid, ids in config.gold.items():
            targets.setdefault(qid, []).extend(ids)
        exact = Path(benchmark_dir) / (config.exact_targets or "exact-targets.jsonl")
    else:
        exact = Path(benchmark_dir) / "exact.jsonl"
    if exact.is_file():
        for qid, groups in pooling.read_exact_targets(exact).items():
            targets.setdefault(qid, []).extend(i for g in groups for i in g)
    return targets


def _summary(values: Sequence[float]) -> dict[str, Any]:
    if not values:
        return {"n": 0, "median": None, "mean": None}
    return {
        "n": len(values),
        "median": round(statistics.median(values), 4),
        "mean": round(statistics.fmean(values), 4),
    }


def measure_benchmark(
    benchmark_dir: Path,
    items: Mapping[str, Item],
    knowledge: Mapping[str, TemplateKnowledge],
) -> dict[str, Any]:
    """Per slice: knowledge and caption shares of the answerable queries with targets."""
    queries = pooling.read_queries(Path(benchmark_dir) / "queries.jsonl")
    targets = query_targets(benchmark_dir)
    family_templates: dict[str, list[str]] = {}
    for item_id, item in items.items():
        if item.kind == "template":
            family_templates.setdefault(pooling.item_family(item.template_group), []).append(
                item_id
            )
    know: dict[str, list[float]] = {s: [] for s in SLICES}
    caption: dict[str, list[float]] = {s: [] for s in SLICES}
    no_entry = dict.fromkeys(SLICES, 0)
    for query in queries:
        ids = [i for i in targets.get(query.qid, []) if i in items]
        ids = ids or family_templates.get(query.family, [])
        if not query.answerable or not ids or query.slice not in know:
            continue
        own = [t for i in ids for t in (items[i].title, items[i].template, items[i].ocr_text)]
        value = share([query.text], own)
        if value is not None:
            caption[query.slice].append(value)
        entries = {key(items[i].template) for i in ids if items[i].template}
        texts = [t for k in sorted(entries) if k in knowledge for t in knowledge_text(knowledge[k])]
        if not texts:
            no_entry[query.slice] += 1
            continue
        value = share([query.text], texts)
        if value is not None:
            know[query.slice].append(value)
    return {
        s: {
            "knowledge": _summary(know[s]),
            "caption": _summary(caption[s]),
            "without_knowledge_entry": no_entry[s],
        }
        for s in SLICES
    }


def measure(
    benchmarks: Mapping[str, Path],
    items: Mapping[str, Item],
    knowledge: Mapping[str, TemplateKnowledge],
) -> dict[str, Any]:
    return {
        "version": VERSION,
        "benchmarks": {
            name: measure_benchmark(path, items, knowledge) for name, path in benchmarks.items()
        },
    }


def _cell(summary: Mapping[str, Any]) -> str:
    if not summary["n"]:
        return "-"
    return f"{summary['median']:.2f} ({summary['n']})"


def render_markdown(report: Mapping[str, Any]) -> str:
    """Two tables (knowledge share, caption share): slices by benchmark, median (n)."""
    names = list(report["benchmarks"])
    lines = [
        "# Query overlap with our own text",
        "",
        "Median share of an answerable query's content words (3+ letters, stop words removed)",
        "found in its targets' knowledge entry, and in their own title, template name and",
        "caption; (n) = queries measured. Queries whose targets have no knowledge entry",
        "(MemeCap posts) are left out of the knowledge share. Targets: the writer's gold and",
        "exact targets (mambomeme/evaluation/overlap_report.py).",
        "",
    ]
    for measure_name, title in (("knowledge", "Knowledge share"), ("caption", "Caption share")):
        lines += [f"## {title}", "", "| slice | " + " | ".join(names) + " |"]
        lines.append("| --- |" + " --- |" * len(names))
        for s in SLICES:
            cells = [_cell(report["benchmarks"][n][s][measure_name]) for n in names]
            lines.append(f"| {s} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def write_report(report: Mapping[str, Any], out_dir: Path) -> list[Path]:
    """overlap.json and overlap.md, published together (report.publish: both or neither)."""
    files = {
        Path(out_dir) / "overlap.json": json.dumps(report, indent=2, sort_keys=True) + "\n",
        Path(out_dir) / "overlap.md": render_markdown(report) + "\n",
    }
    publish({path: text.encode("utf-8") for path, text in files.items()})
    return list(files)


def read_report(out_dir: Path) -> dict[str, Any] | None:
    """overlap.json of a reports folder, or None before the overlap stage wrote one."""
    path = Path(out_dir) / "overlap.json"
    if not path.is_file():
        return None
    value = json.loads(path.read_text(encoding="utf-8"))
    return value if isinstance(value, dict) else None
