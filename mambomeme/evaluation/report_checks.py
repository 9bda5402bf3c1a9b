"""Scorecard sections for issue 31: tune vs the locked check split and the second checks, and
the benchmarks' overlap with our own text. Both read what the scorecard card carries (the checks
stage's checks.json, the overlap stage's overlap.json); a card without them shows nothing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mambomeme.evaluation.benchmark import SLICES


def _num(value: Any, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _gap(tune: Mapping[str, Any] | None, check: Mapping[str, Any] | None) -> list[str]:
    """Check minus tune: raw MMTS and Q ("-" where either side is missing)."""
    if tune is None or check is None:
        return ["-", "-"]
    q_tune, q_check = tune["components"]["Q"], check["components"]["Q"]
    q_gap = None if q_tune is None or q_check is None else q_check - q_tune
    return [_num(check["mmts_raw"] - tune["mmts_raw"]), _num(q_gap, 4)]


def checks_lines(
    scored: Mapping[str, Mapping[str, Any]], checks: Mapping[str, Any] | None
) -> list[str]:
    """One row per system: tune (`scored`: this scorecard's rows as checks.json writes them,
    system -> headline figures), check and each second check of `checks` (checks.json); gap =
    check minus tune in raw MMTS and in Q."""
    if not checks or not checks.get("targets"):
        return []
    targets = checks["targets"]
    names = [n for n in targets if n != "tune"]
    tune = dict(scored)
    for system, row in targets.get("tune", {}).get("systems", {}).items():
        tune.setdefault(system, row)  # frozen earlier selections, scored by the checks stage
    head = ["system", "tune MMTS (raw)", "tune Q"]
    for name in names:
        head += [f"{name} MMTS (raw)", f"{name} Q"]
    if "check" in targets:
        head += ["gap raw (check - tune)", "gap Q"]
    lines = [
        "",
        "## Tune, check and second checks",
        "",
        "Tuning, acceptance and every threshold read only the tune side (this scorecard's",
        "benchmark). The check side is the same benchmark's locked third of query families",
        "(split.yaml, by hash), scored once per run and never read query by query; earlier dev",
        "versions are second checks. "
        + "; ".join(
            f"{n}: {t['benchmark']} ({t['judgement_set']}), {t['queries']} queries in "
            f"{t['families']} families"
            for n, t in targets.items()
        )
        + ".",
        "",
        "| " + " | ".join(head) + " |",
        "| --- " * len(head) + "|",
    ]
    systems = list(dict.fromkeys([*tune, *(s for t in targets.values() for s in t["systems"])]))
    for system in systems:
        row = tune.get(system)
        cells = [system]
        cells += [
            f"{_num(row['mmts'])} ({_num(row['mmts_raw'])})" if row else "-",
            _num(row["components"]["Q"], 4) if row else "-",
        ]
        for name in names:
            other = targets[name]["systems"].get(system)
            cells += [
                f"{_num(other['mmts'])} ({_num(other['mmts_raw'])})" if other else "-",
                _num(other["components"]["Q"], 4) if other else "-",
            ]
        if "check" in targets:
            cells += _gap(row, targets["check"]["systems"].get(system))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def overlap_lines(report: Mapping[str, Any] | None) -> list[str]:
    """The overlap report's (overlap.json) medians: knowledge share and caption share per
    slice."""
    if not report or not report.get("benchmarks"):
        return []
    names = list(report["benchmarks"])
    lines = [
        "",
        "## Benchmark wording: overlap with our own text",
        "",
        "Median share of an answerable query's content words found in its targets' knowledge",
        "entry (K) and in their own title, template name and caption (C); (n) = queries",
        "measured (overlap.md; dev-v3 targets: concept K <= 0.25, visual K <= 0.55).",
        "",
        "| slice | " + " | ".join(f"{n} K | {n} C" for n in names) + " |",
        "| --- " * (1 + 2 * len(names)) + "|",
    ]
    for s in SLICES:
        cells = [s]
        for n in names:
            for measure in ("knowledge", "caption"):
                summary = report["benchmarks"][n][s][measure]
                cells.append(f"{_num(summary['median'])} ({summary['n']})" if summary["n"] else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return lines
