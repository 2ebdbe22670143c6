"""The ranking of ``trainbench report`` as rich tables, Markdown and a PNG chart."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from rich.table import Table

from suite.console import markup as escape
from suite.console import plain
from suite.markdown import escape as md
from suite.validation.ranking import RankRow, by_workload, recommend, recommendation_text


def _f(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def rich_tables(rows: list[RankRow]) -> list[Table]:
    """One rich table per workload, ranked by samples/s, with the samples-per-dollar rank beside it."""
    tables = []
    for workload, group in by_workload(rows).items():
        cost_rank = {
            id(r): i + 1
            for i, r in enumerate(
                sorted(
                    (r for r in group if r.samples_per_dollar is not None), key=lambda r: -(r.samples_per_dollar or 0)
                )
            )
        }
        t = Table(title=f"{workload}: systems ranked by samples/s", title_justify="left")
        for col in ("#", "system", "kind", "config", "samples/s", "USD/h", "samples/$", "$ rank", "band", "runs"):
            t.add_column(col, overflow="fold")
        for i, r in enumerate(group, 1):
            status = escape(r.band_status) if r.compliant else f"[red]{escape(r.band_status)}, not compliant[/]"
            t.add_row(
                str(i),
                escape(r.system),
                r.kind,
                escape(r.config),
                f"{r.throughput:.4g}",
                _f(r.usd_per_hour, "g"),
                _f(r.samples_per_dollar, ",.0f"),
                str(cost_rank.get(id(r), "-")),
                status,
                str(r.runs),
            )
        tables.append(t)
    return tables


def markdown(rows: list[RankRow], chart: Path | None = None) -> str:
    """The ranking and recommendation as Markdown."""
    lines = ["# trainbench report: which system to train on", ""]
    for rec in recommend(rows):
        lines.append(f"- **{md(recommendation_text(rec))}**")
    lines.append("")
    for workload, group in by_workload(rows).items():
        lines += [
            f"## {workload}",
            "",
            "| # | system | kind | config | samples/s | USD/h | samples/$ | band | runs |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for i, r in enumerate(group, 1):
            status = r.band_status if r.compliant else f"{r.band_status}, NOT COMPLIANT"
            lines.append(
                f"| {i} | {md(r.system)} | {r.kind} | {md(r.config)} | {r.throughput:.4g} | "
                f"{_f(r.usd_per_hour, 'g')} | {_f(r.samples_per_dollar, ',.0f')} | {md(status)} | {r.runs} |"
            )
        lines.append("")
    if chart is not None:
        lines += [f"![samples/s and samples per dollar]({chart.name})", ""]
    lines.append(
        'Samples per dollar = samples/s x 3600 / USD per hour (C. Rand, "Instance Selection for Deep '
        'Learning", Jun 2023). Published rows are cited reference bands, not runs validated here.'
    )
    return "\n".join(lines) + "\n"


def chart_png(rows: list[RankRow], path: Path) -> Path:
    """Horizontal bars per workload: samples/s (left) and samples per dollar (right); returns ``path``.

    Submitted systems are blue (red when not compliant), published figures grey and hatched.
    """
    groups = by_workload(rows)
    n = max(len(groups), 1)
    height = sum(max(len(g), 1) * 0.45 + 1.2 for g in groups.values()) or 2.0
    fig, axes = plt.subplots(n, 2, figsize=(12, height), squeeze=False)
    for (workload, group), (ax_t, ax_c) in zip(groups.items(), axes, strict=False):
        labels = [f"{plain(r.system)}\n{plain(r.config)[:48]}".replace("$", r"\$") for r in group][::-1]
        colours = [
            ("tab:blue" if r.compliant else "tab:red") if r.kind == "submission" else "lightgrey" for r in group
        ][::-1]
        hatches = ["" if r.kind == "submission" else "//" for r in group][::-1]
        ys = range(len(group))
        bars = ax_t.barh(ys, [r.throughput for r in group][::-1], color=colours)
        spd = [r.samples_per_dollar or 0.0 for r in group][::-1]
        bars_c = ax_c.barh(ys, spd, color=colours)
        for bar_set in (bars, bars_c):
            for bar, hatch in zip(bar_set, hatches, strict=True):
                bar.set_hatch(hatch)
        for y, r in zip(ys, group[::-1], strict=True):
            ax_t.text(r.throughput, y, f" {r.throughput:.3g}", va="center", fontsize=7)
            ax_c.text(r.samples_per_dollar or 0.0, y, f" {_f(r.samples_per_dollar, ',.0f')}", va="center", fontsize=7)
        ax_t.set_yticks(list(ys), labels, fontsize=7)
        ax_c.set_yticks(list(ys), ["" for _ in labels])
        ax_t.set_xlabel("samples/s")
        ax_c.set_xlabel("samples per USD (unpriced systems: 0)")
        ax_t.set_title(f"{workload}: throughput", fontsize=9)
        ax_c.set_title(f"{workload}: samples per dollar", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
