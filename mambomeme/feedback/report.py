"""The feedback report as text and as a chosen-rank chart: values only; the command prints."""

from __future__ import annotations

import io

from mambomeme.feedback.metrics import (
    DEFINITIONS,
    MIN_REQUESTS,
    OBSERVATIONAL,
    REFORMULATION_WINDOW_S,
    FeedbackReport,
    GroupMetrics,
)

# ----- presentation (values only; the command prints) -------------------------------------

_LABELS = {
    "choose_top10": "choose within top 10",
    "choose": "choose (any rank)",
    "preview": "preview",
    "open": "open",
    "copy": "copy",
    "reformulation": f"reformulation (<= {REFORMULATION_WINDOW_S:g} s)",
    "abandonment": "abandonment",
}


def render_text(report: FeedbackReport) -> str:
    """The human-readable report: the caveat, the window, then every group's metrics."""
    sel = report.selection
    lines = [
        f"Interaction feedback report: {sel.path}",
        OBSERVATIONAL,
        f"Window: since {sel.window_start.isoformat(timespec='seconds')} "
        f"(last {sel.window_days} days); {len(sel.events)} events, "
        f"{report.overall.requests} requests, {report.overall.sessions} sessions; "
        f"{sel.outside_window} older events not counted; {len(sel.problems)} unreadable lines "
        "skipped.",
        f"Slices: {report.slice_note}",
        f"Rates are count/requests; 'n<{MIN_REQUESTS}' marks too few to read much into.",
        "",
        *_group_lines("Overall", report.overall, ""),
    ]
    for name, groups in report.breakdowns.items():
        lines += ["", name.replace("_", " ").capitalize()]
        for key, metrics in groups.items():
            lines += _group_lines(key, metrics, "  ")
    lines += ["", "Definitions"]
    lines += [f"  {name}: {text}" for name, text in DEFINITIONS.items()]
    return "\n".join(lines) + "\n"


def _group_lines(title: str, m: GroupMetrics, indent: str) -> list[str]:
    few = f"  n<{MIN_REQUESTS}"
    out = [f"{indent}{title}: {m.requests} requests, {m.sessions} sessions"]
    for name, rate in m.rates.items():
        value = "-" if rate.rate is None else f"{rate.rate:.3f}"
        out.append(
            f"{indent}  {_LABELS[name]:<28}{value:>7}  {rate.count}/{rate.n}"
            f"{few if rate.too_few else ''}"
        )
    out.append(
        f"{indent}  {'mean reciprocal chosen rank':<28}{m.mean_reciprocal_rank:>7.3f}  "
        f"n={m.requests}{few if m.requests < MIN_REQUESTS else ''}"
    )
    if m.choose_n:
        out.append(
            f"{indent}  {'render to choose':<28} median {m.choose_median_ms:.0f} ms, "
            f"p90 {m.choose_p90_ms:.0f} ms  n={m.choose_n}"
            f"{few if m.choose_n < MIN_REQUESTS else ''}"
        )
    ranks = " ".join(f"{k}:{v}" for k, v in m.chosen_ranks.items() if v)
    out.append(f"{indent}  {'chosen ranks':<28}{ranks or '-'}")
    return out


def chosen_rank_png(report: FeedbackReport) -> bytes:
    """Bars: how many chosen requests picked each rank (1..10, >10), overall."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    labels = list(report.overall.chosen_ranks)
    counts = list(report.overall.chosen_ranks.values())
    figure = Figure(figsize=(6.0, 4.0))
    axes = figure.subplots()
    axes.bar(range(len(labels)), counts, color="tab:blue")
    axes.set_xticks(range(len(labels)), labels)
    axes.set_xlabel("rank of the first choose")
    axes.set_ylabel("requests")
    total = sum(counts)
    axes.set_title(f"Chosen rank ({total} of {report.overall.requests} requests; observational)")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    return buffer.getvalue()
