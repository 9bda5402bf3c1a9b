"""Publish a scorecard: reports/scorecard.md, scorecard.json, metrics.json, metrics/ and plots/.

scorecard.md opens with a summary (what ships and why, failing gates, headline numbers) and a
glossary (evaluation/summary.py). metrics/<system>.json holds each system's headline numbers
under the same keys, so `dvc metrics show` prints one row per system; metrics.json keeps every
number flat ('<system>.<metric>') for `dvc metrics diff --targets`.

Every file is first written under a temporary name in its final folder; only when all of them
are complete are they moved into place with os.replace (atomic per file on one filesystem), so
a failure while rendering or plotting publishes nothing and never leaves a half-written file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mambomeme.evaluation import plots
from mambomeme.evaluation.bootstrap import Interval
from mambomeme.evaluation.report_checks import checks_lines, overlap_lines
from mambomeme.evaluation.scorecard_types import COMPONENTS, Scorecard, SystemRow
from mambomeme.evaluation.summary import glossary_lines, summary_lines

METRICS_DIR = "metrics"


def _f(value: Any, digits: int = 4) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _ci(interval: Mapping[str, Any] | Interval | None, digits: int = 4) -> str:
    """'[low, high]' of a bootstrap interval (a row's, or one of a JSON section's)."""
    if interval is None:
        return "n/a"
    if isinstance(interval, Interval):
        return f"[{_f(interval.low, digits)}, {_f(interval.high, digits)}]"
    return f"[{_f(interval['low'], digits)}, {_f(interval['high'], digits)}]"


def _agreement_lines(agreement: Mapping[str, Any] | None) -> list[str]:
    """Inter-annotator agreement of the frozen judgement set, overall and per slice."""
    if not agreement:
        return [
            "",
            "## Judgement agreement",
            "",
            "No adjudicated judgement set (single-pass provisional judgements).",
        ]
    lines = [
        "",
        f"## Judgement agreement (`{agreement['judgement_set']}`)",
        "",
        "| slice | pairs | quadratic kappa | ordinal alpha | exact | within one |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    blocks = [("overall", agreement["overall"]), *sorted(agreement.get("slices", {}).items())]
    for name, block in blocks:
        lines.append(
            f"| {name} | {block['pairs']} | {_f(block['kappa_quadratic'])} | "
            f"{_f(block['alpha_ordinal'])} | {_f(block['exact'])} | {_f(block['within_one'])} |"
        )
    safety = agreement.get("safety", {})
    if safety:
        lines.append("")
        lines.append(
            f"Safety labels: exact agreement {_f(safety.get('exact'))} over "
            f"{safety.get('items')} items; {agreement.get('queue', 0)} pairs went to a "
            "third annotator."
        )
    coverage = agreement.get("coverage")
    if coverage:
        lines.append("")
        lines.append(
            f"Pool coverage: the current pool has {coverage['pool_pairs']} (query, item) pairs, "
            f"{coverage['pool_unjudged']} of them not yet judged (scored as grade 0; a new "
            f"annotation round); {coverage['judged_outside_pool']} judged pairs are outside "
            f"the current pool (still judgements); {coverage['one_annotator_only']} pairs "
            "graded by one annotator only are left out."
        )
    return lines


def render_markdown(card: Scorecard) -> str:
    v, info = card.versions, card.versions.benchmark
    label = " (PROVISIONAL)" if info.provisional else ""
    lines = [
        f"# Scorecard: {info.name} {info.version}{label}",
        "",
        f"{card.queries} queries in {card.families} families; partition `{info.partition}`"
        + ("; hidden prompts were exposed" if info.exposed else "")
        + ".",
        *summary_lines(card),
        *glossary_lines(),
        "",
        "## Versions",
        "",
        "| what | version |",
        "| --- | --- |",
    ]
    for key in (
        "name",
        "version",
        "partition",
        "judgement_set",
        "corpus",
        "benchmark_sha256",
        "safety_policy",
        "score_version",
        "corpus_manifest",
        "corpus_manifest_sha256",
        "embedding_manifest",
        "embedding_manifest_sha256",
        "code_commit",
    ):
        lines.append(f"| {key} | `{_f(v.value(key))}` |")
    b = card.bootstrap
    lines.append(f"| bootstrap | seed {b.seed}, {b.resamples} resamples of {b.unit} |")
    lines += _agreement_lines(card.section("agreement"))
    lines += [
        "",
        "## Systems (MMTS-Search-v1)",
        "",
        "| system | MMTS | status | raw | "
        + " | ".join(COMPONENTS)
        + " | 95% CI (MMTS) | pass fraction |",
        "| --- " * (6 + len(COMPONENTS)) + "|",
    ]
    for row in card.systems:
        parts = [row.system, _f(row.mmts, 2), row.status, _f(row.mmts_raw, 2)]
        parts += [_f(row.components.value(c)) for c in COMPONENTS]
        parts += [_ci(row.mmts_interval, 2), _f(row.gate_pass_fraction, 3)]
        lines.append("| " + " | ".join(parts) + " |")
    lines += checks_lines(
        {row.system: row.to_json() for row in card.systems}, card.section("checks")
    )
    lines += overlap_lines(card.section("overlap"))
    first_gates = card.systems[0].gates if card.systems else ()
    gate_names = [g.name for g in first_gates]
    lines += [
        "",
        "## Hard gates",
        "",
        "| system | " + " | ".join(gate_names) + " |",
        "| --- " * (1 + len(gate_names)) + "|",
    ]
    for row in card.systems:
        cells = [
            f"{g.status} ({_f(g.value, 3)})" if g.value is not None else g.status for g in row.gates
        ]
        lines.append(f"| {row.system} | " + " | ".join(cells) + " |")
    lines += ["", "Gate rules (each fails when true; NOT EVALUATED counts as failing):", ""]
    lines += [f"- `{g.name}`: {g.rule}" for g in first_gates]
    lines += _slices(card)
    lines += _differences(card)
    lines += _acceptance(card)
    lines += _rerank_acceptance(card)
    lines += _diagnostics(card)
    return "\n".join(lines) + "\n"


def _slices(card: Scorecard) -> list[str]:
    slices = list(card.systems[0].slice_ndcg) if card.systems else []
    lines = [
        "",
        "## nDCG@10 by slice",
        "",
        "| system | " + " | ".join(slices) + " |",
        "| --- " * (1 + len(slices)) + "|",
    ]
    for row in card.systems:
        lines.append(
            f"| {row.system} | " + " | ".join(_f(row.slice_ndcg[s]) for s in slices) + " |"
        )
    lines += [
        "",
        "Per slice: Hit@1 / Hit@5 / Hit@10 / Recall@10 / MRR@10 (answerable queries).",
        "",
        "| system | slice | n | Hit@1 | Hit@5 | Hit@10 | Recall@10 | MRR@10 |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in card.systems:
        for name, m in row.slices.items():
            lines.append(
                f"| {row.system} | {name} | {m['queries']} | {_f(m['hit@1'])} | "
                f"{_f(m['hit@5'])} | {_f(m['hit@10'])} | {_f(m['recall@10'])} | {_f(m['mrr@10'])} |"
            )
    return lines


def _differences(card: Scorecard) -> list[str]:
    lines = [
        "",
        "## Paired family-bootstrap differences (system - baseline, 95% percentile CI)",
        "",
        "| system | baseline | dQ | dMMTS | dMMTS raw | d entity | d quote | d topic | d concept "
        "| d visual | d noisy |",
        "| --- " * 11 + "|",
    ]
    for d in card.differences:
        cells = []
        for metric in (
            "Q",
            "MMTS",
            "ndcg_entity",
            "ndcg_quote",
            "ndcg_topic",
            "ndcg_concept",
            "ndcg_visual",
            "ndcg_noisy",
        ):
            cells.append(f"{_f(d.point.get(metric))} {_ci(d.intervals[metric])}")
        lines.append(f"| {d.system} | {d.baseline} | " + " | ".join(cells) + " |")
    return lines


def _acceptance(card: Scorecard) -> list[str]:
    a = card.acceptance
    lines = ["", "## Semantic-search acceptance (seeds/000)", ""]
    if a is None:
        return lines + ["Not decided: the comparison needs both a `bm25` and a `hybrid` run.", ""]
    official = (
        "official" if a.official else "not official (needs a hidden, final, unexposed benchmark)"
    )
    lines += [f"**Decision: {a.decision}** ({official}).", ""]
    lines += [f"- {'PASS' if c.passed else 'FAIL'} {c.name}: {c.detail}" for c in a.checks]
    if not a.keep_dense:
        lines += [
            "",
            "Negative result kept: hybrid did not earn the dense route its place in the "
            "default; the rows above are the experiment's record.",
        ]
    return lines


def _rerank_acceptance(card: Scorecard) -> list[str]:
    """The seed's rule for hybrid+rerank against each baseline (issue 20; docs/reranker.md)."""
    a = card.section("rerank_acceptance")
    if a is None:
        return []
    rows = a["systems"]

    def value(system: str, metric: str) -> float | None:
        found = (
            rows[system]["Q"]
            if metric == "Q"
            else rows[system]["slice_ndcg"].get(metric.removeprefix("ndcg_"))
        )
        return None if found is None else float(found)

    lines = ["", "## Reranker acceptance (hybrid+rerank, the seed's rule)", ""]
    lines += [
        "Accepted only if it wins against every baseline: +0.03 Q or +0.05 concept nDCG@10 "
        "with the paired family-bootstrap 95% interval above zero, no hard-gate regression, "
        "no entity or quote loss > 0.02.",
        "",
        "| baseline | wins | Q diff [95%] | concept diff [95%] | entity diff [95%] "
        "| quote diff [95%] |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    candidate = next(s for s in rows if s not in a["decisions"])
    for baseline, d in a["decisions"].items():
        cells = []
        for metric in ("Q", "ndcg_concept", "ndcg_entity", "ndcg_quote"):
            new, old = value(candidate, metric), value(baseline, metric)
            point = None if new is None or old is None else new - old
            interval = d["differences"].get(metric)
            cells.append(f"{_f(point)} {_ci(interval)}" if interval else _f(point))
        wins = "yes" if d["wins"] else "no"
        lines.append(f"| {baseline} | {wins} | " + " | ".join(cells) + " |")
    accepted = all(d["wins"] for d in a["decisions"].values())
    verdict = (
        "accept hybrid+rerank** (it may be served: params rerank.enabled)"
        if accepted
        else "reject hybrid+rerank** (left off by default, rerank.enabled false; the rows are "
        "the negative result's record)"
    )
    return lines + ["", f"**Decision: {verdict}.", ""]


def _diagnostics(card: Scorecard) -> list[str]:
    keys = (
        "duplicate_rate",
        "template_repeat_rate",
        "missing_preview_rate",
        "missing_attribution_rate",
        "unjudged_top10_count",
        "safety_from_corpus_count",
        "errored_queries",
    )
    lines = [
        "",
        "## Diagnostics (reported, not scored)",
        "",
        "| system | " + " | ".join(keys) + " |",
        "| --- " * (1 + len(keys)) + "|",
    ]
    for row in card.systems:
        lines.append(f"| {row.system} | " + " | ".join(_f(row.diagnostics[k]) for k in keys) + " |")
    lines += ["", "Shown results by route family and slice (lexical-only / dense-only / both):", ""]
    for row in card.systems:
        routes = row.diagnostics["routes_by_slice"] or {}
        text = "; ".join(
            f"{s} {c['lexical_only']}/{c['dense_only']}/{c['both']}" for s, c in routes.items()
        )
        lines.append(f"- {row.system}: {text or 'n/a'}")
    lines += [
        "",
        "Unjudged items in the top 10 count as grade 0; they are listed in scorecard.json.",
    ]
    return lines


def flat_metrics(card: Scorecard) -> dict[str, Any]:
    """Small flat metrics for `dvc metrics show/diff`: '<system>.<metric>' -> number."""
    flat: dict[str, Any] = {}
    for row in card.systems:
        s = row.system
        flat[f"{s}.mmts"] = row.mmts
        flat[f"{s}.mmts_raw"] = row.mmts_raw
        flat[f"{s}.pass"] = int(row.status == "PASS")
        for c in COMPONENTS:
            flat[f"{s}.{c}"] = row.components.value(c)
        for name, value in row.slice_ndcg.items():
            flat[f"{s}.ndcg_{name}"] = value
        flat[f"{s}.latency_p95_ms"] = row.latency_p95_ms
    if card.acceptance is not None:
        flat["acceptance.keep_dense"] = int(card.acceptance.keep_dense)
    return flat


def system_metrics(row: SystemRow) -> dict[str, Any]:
    """One system's headline numbers for `dvc metrics show` (one file, one table row)."""
    metrics: dict[str, Any] = {
        "MMTS": row.mmts,
        "pass": int(row.status == "PASS"),
        "MMTS_raw": row.mmts_raw,
    }
    metrics.update({c: row.components.value(c) for c in COMPONENTS})
    metrics["Hit@10"] = row.coverage.hit10
    metrics["CorrectEmpty"] = row.coverage.correct_empty
    metrics["safe_ordinary"] = row.safety.ordinary
    metrics["safe_safety"] = row.safety.safety_subset
    metrics["p95_ms"] = row.latency_p95_ms
    return metrics


def _json(value: Any) -> bytes:
    return (json.dumps(value, indent=2, sort_keys=False, ensure_ascii=False) + "\n").encode("utf-8")


def scorecard_files(card: Scorecard, out_dir: Path) -> dict[Path, bytes]:
    """Every file of one publication and its bytes (rendered in memory, nothing written)."""
    out_dir = Path(out_dir)
    plot_dir = out_dir / "plots"
    slice_rows, latency_rows = plots.slice_ndcg_rows(card), plots.latency_rows(card)
    return {
        out_dir / "scorecard.md": render_markdown(card).encode("utf-8"),
        out_dir / "scorecard.json": _json(card.to_json()),
        out_dir / "metrics.json": _json(flat_metrics(card)),
        **{
            out_dir / METRICS_DIR / f"{row.system}.json": _json(system_metrics(row))
            for row in card.systems
        },
        plot_dir / "slice_ndcg.csv": plots.csv_bytes(slice_rows),
        plot_dir / "slice_ndcg.json": plots.json_bytes(slice_rows),
        plot_dir / "latency.csv": plots.csv_bytes(latency_rows),
        plot_dir / "latency.json": plots.json_bytes(latency_rows),
        plot_dir / "slice_ndcg.png": plots.slice_ndcg_png(card),
        plot_dir / "latency.png": plots.latency_png(card),
    }


def publish(files: Mapping[Path, bytes]) -> None:
    """Write all files to temporary names, then move each into place; on failure publish none."""
    temps = {path: path.with_name(f".{path.name}.tmp-{os.getpid()}") for path in files}
    try:
        for path, data in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(temps[path], "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
        for path, temp in temps.items():
            os.replace(temp, path)
    finally:
        for temp in temps.values():
            if temp.exists():
                temp.unlink()


def write_scorecard(card: Scorecard, out_dir: Path) -> list[Path]:
    """Publish every file; then drop metrics/<system>.json of systems no longer scored."""
    files = scorecard_files(card, out_dir)
    publish(files)
    for stale in sorted((Path(out_dir) / METRICS_DIR).glob("*.json")):
        if stale not in files:
            stale.unlink()
    return list(files)
