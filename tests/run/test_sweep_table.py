"""A sweep's table, Markdown, plot and parent metrics from point rows, including hostile values: swept
values are user input (a data_dir path, any string) and must reach the terminal, Markdown and the
plot as literal text, and the parent must report the best point, not the last."""

from __future__ import annotations

import io
from typing import Any

import matplotlib
import numpy as np
from matplotlib.container import BarContainer
from matplotlib.figure import Figure
from rich.console import Console

from suite.run.sweep_plot import sweep_figure
from suite.run.sweep_table import best_index, parent_metrics, point_steps, sweep_markdown, sweep_table
from tests.run.test_sweep_tracking import joined_lines, sticks_out

matplotlib.use("Agg")

HOSTILE = "[bold]x[/bold] a|b $c$ \x1b[31mred"
LONG = "/tmp/" + "deep/" * 30 + "mnist"


def row(
    value: str, tput: float | None, ci: list[float | None] | None = None, error: str | None = None
) -> dict[str, Any]:
    """A point row as :meth:`suite.run.sweep.SweepPoint.row` writes it (None throughput: a failed point)."""
    ok = tput is not None
    return {
        "value": value,
        "status": "complete" if ok else "failed",
        "error": error,
        "throughput_samples_per_s": tput,
        "throughput_ci95": ci,
        "throughput_ci95_status": ("bounded" if ci else "unbounded") if ok else None,
        "input_bound_fraction": 0.25 if ok else None,
        "verdict": "compute-bound" if ok else None,
        "cpu_mean_percent": 90.0 if ok else None,
        "preprocessing": None,
        "result_path": f"/results/{len(value)}/result.json",
        "mlflow_run_id": None,
    }


ROWS = [
    row(HOSTILE, 12.0, [11.0, 13.5]),
    row(LONG, None, error="[red]data_dir[/red] is not a directory\x1b[2J"),
    row("plain", 20.0, None),
    row("last", 15.0, [14.0, 16.0]),
]


def _render(table: Any, width: int) -> str:
    out = io.StringIO()
    Console(file=out, width=width, color_system=None).print(table)
    return out.getvalue()


def test_the_parent_reports_the_best_point_not_the_last() -> None:
    assert best_index(ROWS) == 2
    metrics = parent_metrics(ROWS, list(range(len(ROWS))))
    head = {name: (value, step) for name, value, step in metrics[:2]}
    assert head == {"throughput_samples_per_s": (20.0, 0), "input_bound_fraction": (0.25, 0)}
    assert "throughput_ci95_low" not in {m[0] for m in metrics}  # the best point has no CI: none is invented
    series = [(v, s) for n, v, s in metrics if n == "sweep_throughput_samples_per_s"]
    assert series == [(12.0, 0), (20.0, 2), (15.0, 3)]  # the failed point has no value


def test_steps_are_the_values_when_they_are_integers() -> None:
    assert point_steps(["0", "24"]) == ([0, 24], "the swept value")
    for values in (["0.5", "1"], ["-1", "2"], ["default", "jemalloc"]):
        assert point_steps(values) == (list(range(len(values))), "the point's index in sweep.values")


def test_hostile_values_stay_literal_in_the_table_and_markdown() -> None:
    wide = _render(sweep_table("data_dir", ROWS, "sweep of [b]data_dir[/b]", width=200), 200)
    assert "[bold]x[/bold]" in wide and "[b]data_dir[/b]" in wide and "\x1b" not in wide
    assert "[red]data_dir[/red] is not a directory" in wide and "(best)" in wide
    narrow = _render(sweep_table("data_dir", ROWS, "sweep", width=60), 60)
    assert max(len(line) for line in narrow.splitlines()) <= 60 and "left out" in narrow
    md = sweep_markdown("mnist-dataheavy", "data_dir", ROWS)
    assert "\\[bold\\]x\\[/bold\\] a\\|b" in md and "\x1b" not in md
    lines = [line for line in md.splitlines() if line.startswith("| ")]
    assert len(lines) == 2 + len(ROWS) and all(line.count(" | ") == 6 for line in lines)  # no cell broken by a '|'


def _tick_texts(fig: Figure) -> list[str]:
    return [t.get_text() for t in fig.axes[0].get_xticklabels()]


def test_a_categorical_plot_has_bars_whiskers_a_failed_cross_and_labels_that_fit() -> None:
    fig = sweep_figure("data_dir", ROWS, "mnist-dataheavy: sweep of data_dir")
    ax = fig.axes[0]
    [bars] = [c for c in ax.containers if isinstance(c, BarContainer)]
    assert len(bars) == 3  # the failed point has no bar ...
    crosses = [line for line in ax.get_lines() if line.get_marker() == "x"]
    assert len(crosses) == 1 and np.asarray(crosses[0].get_ydata()).tolist() == [0]  # ... but a cross on the axis
    ticks = _tick_texts(fig)
    assert all("\x1b" not in t for t in ticks) and "\\$c\\$" in ticks[0].replace("\n", " ")
    assert "…" in ticks[1]  # the long path is shortened, keeping its end
    assert ticks[1].replace("\n", "").endswith("mnist")
    assert "no CI" in " ".join(t.get_text() for t in ax.texts)  # the point without an interval says so
    assert joined_lines(fig) == [] and max(sticks_out(fig)) <= 0.01


def test_a_wide_numeric_range_gets_a_log_axis_and_unjoined_points() -> None:
    rows = [row(str(b), 10.0 + b / 8, [9.0 + b / 8, 11.0 + b / 8]) for b in (1, 2, 4, 8, 16, 32, 64)]
    fig = sweep_figure("batch_size", rows, "resnet50-cpu: sweep of batch_size")
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and not [c for c in ax.containers if isinstance(c, BarContainer)]
    assert joined_lines(fig) == [] and max(sticks_out(fig)) <= 0.01
