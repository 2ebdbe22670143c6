"""The ranking of ``trainbench report`` as rich tables and Markdown; the chart is :mod:`.ranking_chart`.

One table per ranking (:func:`suite.validation.ranking.rankings`): figures of different
workloads, device classes, precisions or open-division configs never share one.
System names, configs and sources come from submission trees and bands files, so they
are stripped of control characters and escaped (rich markup, Markdown) here.
"""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from suite import markdown as md
from suite.console import markup
from suite.tables import PIPE_WIDTH, Col, fitted_table
from suite.validation.ranking import RankRow, rankings, recommend, recommendation_text

COLUMNS = (
    Col("#", justify="right"),
    Col("system", wrap=True),
    Col("kind", drop=6),
    Col("config", drop=5, wrap=True),
    Col("samples/s", justify="right"),
    Col("95% CI", drop=2, justify="right"),
    Col("USD/h", drop=7, justify="right"),
    Col("samples/$", drop=4, justify="right"),
    Col("$ rank", drop=8, justify="right"),
    Col("band", drop=3, wrap=True),
    Col("runs", drop=9, justify="right"),
    Col("samples/J", drop=10, justify="right"),
)
"""The table's columns; on a narrow terminal the highest ``drop`` goes first."""


def _f(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def ci_text(r: RankRow) -> str:
    """``[low, high]`` in samples/s, or ``none`` (a published figure, or no interval)."""
    if r.ci95_low is None or r.ci95_high is None:
        return "none"
    return f"[{r.ci95_low:.4g}, {r.ci95_high:.4g}]"


def _cost_ranks(group: list[RankRow]) -> dict[int, int]:
    priced = sorted((r for r in group if r.samples_per_dollar is not None), key=lambda r: -(r.samples_per_dollar or 0))
    return {id(r): i + 1 for i, r in enumerate(priced)}


def _cells(i: int, r: RankRow, cost_rank: int | None) -> list[str]:
    """One row's cells as plain text (not yet escaped)."""
    status = r.band_status if r.compliant else f"{r.band_status}, not compliant"
    return [
        str(i),
        r.system,
        r.kind,
        r.config.split(": ", 1)[-1],  # the division is in the ranking's title
        f"{r.throughput:.4g}",
        ci_text(r),
        _f(r.usd_per_hour, "g"),
        _f(r.samples_per_dollar, ",.0f"),
        "-" if cost_rank is None else str(cost_rank),
        status,
        str(r.runs),
        _f(r.samples_per_joule, ",.3g"),
    ]


def rich_tables(rows: list[RankRow], width: int = PIPE_WIDTH) -> list[Table]:
    """One rich table per ranking, by samples/s, with the samples-per-dollar rank beside it, each
    fitted to ``width`` characters (:func:`suite.tables.fitted_table`)."""
    tables = []
    for (workload, comparable), group in rankings(rows).items():
        ranks = _cost_ranks(group)
        body = []
        for i, r in enumerate(group, 1):
            cells = [markup(c) for c in _cells(i, r, ranks.get(id(r)))]
            if not r.compliant:
                cells[9] = f"[red]{cells[9]}[/]"
            body.append(cells)
        title = markup(f"{workload} · {comparable}: ranked by samples/s")
        tables.append(fitted_table(title, COLUMNS, body, width))
    return tables


def markdown_advice(rows: list[RankRow]) -> str:
    """The recommendations as a Markdown list, one per ranking (untrusted text escaped)."""
    return "\n".join(f"- **{md.escape(recommendation_text(rec))}**" for rec in recommend(rows)) + "\n"


def markdown(rows: list[RankRow], chart: Path | None = None) -> str:
    """The rankings and recommendations as Markdown (untrusted text escaped)."""
    lines = ["# trainbench report: which system to train on", "", markdown_advice(rows)]
    head = [c.header for c in COLUMNS if c.header != "$ rank"]
    for (workload, comparable), group in rankings(rows).items():
        lines += [f"## {md.escape(workload)}: {md.escape(comparable)}", ""]
        lines += ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
        for i, r in enumerate(group, 1):
            cells = _cells(i, r, None)
            del cells[8]  # the $ rank column
            lines.append("| " + " | ".join(md.escape(c) for c in cells) + " |")
        lines.append("")
    if chart is not None:
        lines += [f"![samples/s and samples per dollar, one panel per device class]({chart.name})", ""]
    lines.append(
        'Samples per dollar = samples/s x 3600 / USD per hour (C. Rand, "Instance Selection for Deep '
        "Learning\", Jun 2023). Samples per joule = measured samples / the GPUs' board energy over the "
        "measurement windows (NVML), a submission's median; it leaves out the host. Published rows are "
        "cited reference bands, not runs validated here, and "
        "carry no CI (a single figure). A submission's 95% CI is a Student-t interval over its runs' "
        "seconds per sample. Only figures of one workload, device class, precision (bf16 emulated apart "
        "from native) and, in the open division, one computed config share a ranking."
    )
    return "\n".join(lines) + "\n"
