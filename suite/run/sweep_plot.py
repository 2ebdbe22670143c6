"""A sweep's plot: throughput with its 95% CI against the swept setting, and the input-bound fraction.

A categorical setting (any value that is not a number) gets one bar per value with
its CI whisker; a numeric setting gets one point per value, with whiskers, on a
numeric axis. Points are never joined by lines: a line between two settings would
claim values in between that nobody measured. The input-bound fraction is a marker on
a second axis (0-1). The best point is drawn in its own colour; a failed point is a red
cross on the axis. Values are user input, so tick labels are stripped of control
characters, shortened, and ``$`` is escaped (matplotlib would read it as math).
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from suite.markdown import plain
from suite.run.sweep_table import best_index, ci_bounds

LABEL_MAX = 40
"""Longest tick label kept, in characters (longer values keep their start and end)."""
BLUE, BEST, RED, GREY = "tab:blue", "tab:green", "tab:red", "tab:grey"


def numeric_values(values: list[str]) -> list[float] | None:
    """The values as numbers when every one is a finite number, else None (a categorical setting)."""
    try:
        nums = [float(v) for v in values]
    except ValueError:
        return None
    return nums if all(math.isfinite(n) for n in nums) else None


def _short(text: str, limit: int) -> str:
    text = plain(text)
    if len(text) > limit:
        half = (limit - 1) // 2
        text = text[:half] + "…" + text[-half:]
    return text


def safe_text(text: str, limit: int = LABEL_MAX) -> str:
    """``text`` on one line, without control characters, at most ``limit`` characters (a longer
    text keeps its start and its end), ``$`` escaped."""
    return _short(text, limit).replace("$", r"\$")


def tick_label(value: str) -> str:
    """``value`` as a tick label: as :func:`safe_text`, one line per 20 characters."""
    lines = textwrap.wrap(_short(value, LABEL_MAX), 20, break_long_words=True, break_on_hyphens=False)
    return "\n".join(lines).replace("$", r"\$") or " "


def _whiskers(rows: list[dict[str, Any]], idx: list[int]) -> tuple[list[int], list[float], list[float]]:
    """The points of ``idx`` that have a CI, with their whisker lengths below and above (0 above
    for an interval unbounded above, which is labelled on the plot)."""
    with_ci, below, above = [], [], []
    for i in idx:
        tput = rows[i]["throughput_samples_per_s"]
        low, high = ci_bounds(rows[i])
        if low is None:
            continue
        with_ci.append(i)
        below.append(max(tput - low, 0.0))
        above.append(max(high - tput, 0.0) if high is not None else 0.0)
    return with_ci, below, above


def _note(ax: Axes, x: float, y: float, text: str) -> None:
    ax.annotate(text, (x, y), ha="center", va="bottom", fontsize=7, xytext=(0, 3), textcoords="offset points")


def sweep_figure(key: str, rows: list[dict[str, Any]], title: str) -> Figure:
    """The plot as a matplotlib figure (:func:`sweep_png` saves and closes it).

    Args:
        key: the swept setting (the x-axis label).
        rows: the points, as :meth:`suite.run.sweep.SweepPoint.row` gives them.
        title: the figure's title.
    """
    values = [r["value"] for r in rows]
    nums = numeric_values(values)
    xs: list[float] = nums if nums is not None else [float(i) for i in range(len(values))]
    ok = [i for i, r in enumerate(rows) if r["status"] == "complete"]
    best = best_index(rows)
    tput = {i: float(rows[i]["throughput_samples_per_s"]) for i in ok}
    fig, ax = plt.subplots(figsize=(8, 5), dpi=100, layout="constrained")
    handles: list[Any] = []
    if nums is None:  # categories: bars
        ax.bar([xs[i] for i in ok], [tput[i] for i in ok], width=0.6, color=[BEST if i == best else BLUE for i in ok])
        handles.append(Patch(color=BLUE, label="throughput, samples/s"))
        ax.set_xlim(-0.6, len(values) - 0.4)
    else:  # numbers: points on a numeric axis, never joined
        ax.plot([xs[i] for i in ok], [tput[i] for i in ok], "o", linestyle="none", color=BLUE, ms=7,
                label="throughput, samples/s")  # fmt: skip
        if best is not None:
            ax.plot([xs[best]], [tput[best]], "o", linestyle="none", color=BEST, ms=9)
        if min(xs) > 0 and len(xs) > 2 and max(xs) / min(xs) >= 16:
            ax.set_xscale("log", base=2)
        else:
            pad = (max(xs) - min(xs)) * 0.08 or 0.5
            ax.set_xlim(min(xs) - pad, max(xs) + pad)
        handles += ax.get_legend_handles_labels()[0]
    with_ci, below, above = _whiskers(rows, ok)
    if with_ci:
        bars = ax.errorbar([xs[i] for i in with_ci], [tput[i] for i in with_ci], yerr=[below, above], fmt="none",
                           ecolor="black", capsize=6, elinewidth=1.5, label="95% CI of the throughput")  # fmt: skip
        handles.append(bars)
    tops = {i: tput[i] + (above[with_ci.index(i)] if i in with_ci else 0.0) for i in ok}
    for i in ok:
        low, high = ci_bounds(rows[i])
        extra = "" if low is not None and high is not None else (", CI open above" if low is not None else ", no CI")
        _note(ax, xs[i], tops[i], f"{tput[i]:.3g}{extra}")
    if best is not None:
        label = f"best: {safe_text(values[best])}"
        handles.append(
            Patch(color=BEST, label=label)
            if nums is None
            else Line2D([], [], marker="o", color=BEST, linestyle="none", label=label)
        )
    ax.set_xlabel(safe_text(key, 80))
    ax.set_ylabel("throughput, samples/s", color=BLUE)
    ax.set_ylim(bottom=0, top=max(tops.values(), default=1.0) * 1.2)
    ax2 = ax.twinx()
    ax2.plot([xs[i] for i in ok], [rows[i]["input_bound_fraction"] for i in ok], "D", linestyle="none", color=RED,
             ms=6, label="input-bound fraction (right axis)")  # fmt: skip
    ax2.set_ylabel("input-bound fraction\n(data wait / step time)", color=RED)
    ax2.set_ylim(0, 1.05)
    handles += ax2.get_legend_handles_labels()[0]
    failed = [i for i in range(len(rows)) if i not in ok]
    if failed:
        (cross,) = ax.plot([xs[i] for i in failed], [0] * len(failed), "x", linestyle="none", color=RED, ms=12,
                           mew=3, clip_on=False, label="failed point (its error is in sweep.md)")  # fmt: skip
        handles.append(cross)
    ax.set_xticks(xs, [tick_label(v) for v in values], fontsize=8)
    fig.legend(handles=handles, loc="outside lower center", ncols=2, frameon=False, fontsize=8)
    ax.set_title(safe_text(title, 100), fontsize=10)
    return fig


def sweep_png(key: str, rows: list[dict[str, Any]], path: Path, title: str) -> Path:
    """Write :func:`sweep_figure` as a PNG at ``path`` and return ``path``."""
    fig = sweep_figure(key, rows, title)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path)
    finally:
        plt.close(fig)
    return path
