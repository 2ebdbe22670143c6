"""``report.png``: one panel per device class (CPU, GPU), each with its own axes, throughput on the
left and samples per dollar on the right.

Inside a panel every ranking (:func:`suite.validation.ranking.rankings`) is a block
under its own heading, so figures that may not be compared are never side by side
without one. Bars carry 95% CI whiskers where an interval exists (submissions; a
published figure is a single value). An axis turns logarithmic when its figures span
more than :data:`LOG_SPAN`. Labels are shortened to fit, stripped of control
characters, and ``$`` is escaped (matplotlib reads it as math).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter
from matplotlib.transforms import blended_transform_factory

from suite.markdown import plain
from suite.validation.ranking import RankRow, rankings

LOG_SPAN = 20.0
"""Largest / smallest figure on one axis above which the axis is logarithmic."""
SUBMITTED, NOT_COMPLIANT, PUBLISHED = "tab:blue", "tab:red", "lightgrey"
DEVICE_NAMES = {"cpu": "CPU", "gpu": "GPU"}


def _short(text: str, limit: int) -> str:
    text = plain(text)
    return (text if len(text) <= limit else text[: limit - 3] + "...").replace("$", r"\$")


def _label(r: RankRow) -> str:
    kind = "published" if r.kind == "published" else "submitted"
    config = r.config.split(": ", 1)[-1]
    return f"{_short(r.system, 32)} ({kind})\n{_short(config, 44)}"


def _colour(r: RankRow) -> str:
    if r.kind != "submission":
        return PUBLISHED
    return SUBMITTED if r.compliant else NOT_COMPLIANT


def _slots(rows: list[RankRow], device: str) -> list[tuple[str, RankRow | None]]:
    """Top to bottom: a heading per ranking of ``device``, then its rows."""
    out: list[tuple[str, RankRow | None]] = []
    for (workload, comparable), group in rankings(rows).items():
        if group[0].device != device:
            continue
        out.append((_short(f"{workload} · {comparable}", 95), None))
        out += [(_label(r), r) for r in group]
    return out


def _scale(ax: Axes, lows: list[float], highs: list[float]) -> None:
    """Log x when the figures span more than LOG_SPAN; room on the right for the value labels."""
    positive = [v for v in lows if v > 0]
    top = max(highs, default=1.0) or 1.0
    if positive and top / min(positive) > LOG_SPAN:
        ax.set_xscale("log")
        ax.set_xlim(min(positive) / 2, top * 4)
    else:
        ax.set_xlim(0, top * 1.25)


def _tick(value: float, _: object) -> str:
    """An axis figure without exponent: ``400k``, ``1.2M``, ``37.5``."""
    for div, suffix in ((1e6, "M"), (1e3, "k")):
        if abs(value) >= div:
            return f"{value / div:g}{suffix}"
    return f"{value:g}"


def _panel(ax: Axes, slots: list[tuple[str, RankRow | None]], per_dollar: bool) -> None:
    """Bars (with CI whiskers) of one measure, samples/s or samples per dollar, for one device class."""
    n = len(slots)
    heading = blended_transform_factory(ax.transAxes, ax.transData)
    lows, highs = [], []
    for j, (text, r) in enumerate(slots):
        y = n - 1 - j
        if r is None:
            if not per_dollar:
                ax.text(0.005, y, text, transform=heading, fontsize=8, fontweight="bold", va="center")
            continue
        scale = 3600 / r.usd_per_hour if per_dollar and r.usd_per_hour else (None if per_dollar else 1.0)
        if scale is None:
            ax.text(0.005, y, "no price", transform=heading, fontsize=7, va="center", color="dimgrey")
            continue
        value = r.throughput * scale
        ax.barh(y, value, color=_colour(r), hatch="" if r.kind == "submission" else "//", edgecolor="dimgrey")
        high = value
        if r.ci95_low is not None and r.ci95_high is not None:
            low_v, high = r.ci95_low * scale, r.ci95_high * scale
            ax.errorbar(value, y, xerr=[[value - low_v], [high - value]], fmt="none", ecolor="black", capsize=4)
        ax.annotate(f"{value:,.4g}" if value < 1e4 else f"{value:,.0f}", (high, y), xytext=(4, 0),
                    textcoords="offset points", va="center", fontsize=7)  # fmt: skip
        lows.append(value)
        highs.append(high)
    _scale(ax, lows, highs)
    ax.xaxis.set_major_formatter(FuncFormatter(_tick))
    ax.set_ylim(-0.7, n - 0.3)


def chart_figure(rows: list[RankRow]) -> Figure:
    """The chart as a matplotlib figure (:func:`chart_png` saves and closes it)."""
    devices = sorted({r.device for r in rows}, key=lambda d: (d not in DEVICE_NAMES, d))
    slots = {d: _slots(rows, d) for d in devices}
    total = sum(len(s) for s in slots.values())
    fig = plt.figure(figsize=(13, 1.6 + 0.42 * total + 0.9 * len(devices)), dpi=100, layout="constrained")
    grid = fig.add_gridspec(max(len(devices), 1), 2, height_ratios=[len(slots[d]) + 1.5 for d in devices] or [1])
    for k, device in enumerate(devices):
        name = DEVICE_NAMES.get(device, _short(device, 12).upper())
        ax_t = fig.add_subplot(grid[k, 0])
        ax_c = fig.add_subplot(grid[k, 1], sharey=ax_t)
        _panel(ax_t, slots[device], per_dollar=False)
        _panel(ax_c, slots[device], per_dollar=True)
        ys = [len(slots[device]) - 1 - j for j, (_, r) in enumerate(slots[device]) if r is not None]
        ax_t.set_yticks(ys, [text for text, r in slots[device] if r is not None], fontsize=7)
        ax_c.tick_params(axis="y", labelleft=False)
        ax_t.set_title(f"{name}: throughput, samples/s (higher is better)", fontsize=10)
        ax_c.set_title(f"{name}: samples per US dollar (higher is better)", fontsize=10)
        ax_t.set_xlabel("samples/s" + (" (log scale)" if ax_t.get_xscale() == "log" else ""), fontsize=8)
        ax_c.set_xlabel("samples per USD" + (" (log scale)" if ax_c.get_xscale() == "log" else ""), fontsize=8)
    kinds = {_colour(r) for r in rows}
    handles: list[Any] = [
        Patch(facecolor=colour, edgecolor="dimgrey", hatch=hatch, label=label)
        for colour, hatch, label in (
            (SUBMITTED, "", "submitted, validated"),
            (NOT_COMPLIANT, "", "submitted, not compliant"),
            (PUBLISHED, "//", "published figure (cited; no CI)"),
        )
        if colour in kinds
    ]
    if any(r.ci95_low is not None for r in rows):
        handles.append(Line2D([], [], color="black", marker="|", markersize=10, label="95% CI over the runs"))
    fig.legend(handles=handles, loc="outside lower center", ncols=4, frameon=False, fontsize=8)
    fig.suptitle("trainbench report: figures share a block only when they are like for like", fontsize=11)
    return fig


def chart_png(rows: list[RankRow], path: Path) -> Path:
    """Write :func:`chart_figure` as a PNG at ``path`` and return ``path``."""
    fig = chart_figure(rows)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path)
    finally:
        plt.close(fig)
    return path
