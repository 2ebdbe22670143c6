"""A sweep's answer in words and numbers: its best point, its table (rich and Markdown), and what
the parent MLflow run records (the best point's metrics, the per-point series, tags).

Rows are :meth:`suite.run.sweep.SweepPoint.row` dicts. The plot is in :mod:`suite.run.sweep_plot`.
Swept values and errors are user input: they are stripped of control characters and
escaped for rich markup and Markdown here.
"""

from __future__ import annotations

from typing import Any

from rich.markup import escape as rich_escape
from rich.table import Table

from suite import markdown
from suite.tables import PIPE_WIDTH, Col, fitted_table

STEP_MAX = 2**63 - 1
"""MLflow's largest metric step (int64)."""


def best_index(rows: list[dict[str, Any]]) -> int | None:
    """Index of the complete point with the highest throughput (the first of equals), or None when none completed."""
    done = [i for i, r in enumerate(rows) if r["status"] == "complete" and r["throughput_samples_per_s"] is not None]
    return max(done, key=lambda i: (rows[i]["throughput_samples_per_s"], -i)) if done else None


def ci_bounds(row: dict[str, Any]) -> tuple[float | None, float | None]:
    """(low, high) of the point's 95% CI in samples/s; None where not bounded."""
    ci = row.get("throughput_ci95")
    if not ci:
        return None, None
    return ci[0], ci[1]


def ci_text(row: dict[str, Any]) -> str:
    """The 95% CI as ``[low, high] ±x%``, ``[low, unbounded)``, ``unbounded`` (the steps vary too
    much for their number: more repeats or steps bound it), or ``none``."""
    low, high = ci_bounds(row)
    tput = row.get("throughput_samples_per_s")
    if low is None or tput is None:
        return "unbounded" if row.get("throughput_ci95_status") == "unbounded" and tput is not None else "none"
    if high is None:
        return f"[{low:.3g}, unbounded)"
    return f"[{low:.3g}, {high:.3g}] ±{(high - low) / 2 / tput:.1%}"


def point_steps(values: list[str]) -> tuple[list[int], str]:
    """MLflow steps for the points and what they mean: the values themselves when all are integers
    (the MLflow chart's x-axis is then the knob), else the points' indices."""
    try:
        ints = [int(v) for v in values]
    except ValueError:
        ints = []
    if ints and all(0 <= i <= STEP_MAX for i in ints):
        return ints, "the swept value"
    return list(range(len(values))), "the point's index in sweep.values"


def parent_metrics(rows: list[dict[str, Any]], steps: list[int]) -> list[tuple[str, float, int]]:
    """What the parent run logs, as (name, value, step), in logging order.

    First the best point's headline under the names a point's own run uses
    (``throughput_samples_per_s``, ``throughput_ci95_low``/``_high``/``_rel``,
    ``input_bound_fraction``; step 0), so the parent's row in MLflow's run list shows
    the sweep's answer; then every complete point as ``sweep_*`` series at ``steps``.
    """
    out: list[tuple[str, float, int]] = []
    best = best_index(rows)
    if best is not None:
        b = rows[best]
        low, high = ci_bounds(b)
        tput = b["throughput_samples_per_s"]
        rel = (high - low) / 2 / tput if low is not None and high is not None else None
        for name, value in (
            ("throughput_samples_per_s", tput),
            ("throughput_ci95_low", low),
            ("throughput_ci95_high", high),
            ("throughput_ci95_rel", rel),
            ("input_bound_fraction", b["input_bound_fraction"]),
        ):
            if value is not None:
                out.append((name, float(value), 0))
    for row, step in zip(rows, steps, strict=True):
        if row["status"] != "complete":
            continue
        low, high = ci_bounds(row)
        for name, value in (
            ("sweep_throughput_samples_per_s", row["throughput_samples_per_s"]),
            ("sweep_throughput_ci95_low", low),
            ("sweep_throughput_ci95_high", high),
            ("sweep_input_bound_fraction", row["input_bound_fraction"]),
        ):
            if value is not None:
                out.append((name, float(value), step))
    return out


def parent_tags(key: str, rows: list[dict[str, Any]]) -> dict[str, str]:
    """The parent's tags: the best point (``trainbench.sweep_best``, its child run) and the run
    page's description (``mlflow.note.content``, Markdown, escaped)."""
    best = best_index(rows)
    failed = [r for r in rows if r["status"] != "complete"]
    lines = [f"Sweep of `{markdown.escape(key)}` over {len(rows)} point(s)."]
    tags: dict[str, str] = {}
    if best is not None:
        b = rows[best]
        tags["trainbench.sweep_best"] = markdown.plain(f"{key}={b['value']}")
        if b.get("mlflow_run_id"):
            tags["trainbench.sweep_best_run_id"] = str(b["mlflow_run_id"])
        lines.append(
            f"**Best: {markdown.escape(key)}={markdown.escape(b['value'])}, "
            f"{b['throughput_samples_per_s']:.4g} samples/s, 95% CI {markdown.escape(ci_text(b))}** "
            "(the metrics of this run are the best point's)."
        )
    else:
        lines.append("**No point completed.**")
    if failed:
        lines.append(f"{len(failed)} point(s) failed: " + ", ".join(markdown.escape(r["value"]) for r in failed) + ".")
    lines.append("The table is in `sweep.md` and `sweep.json`, the plot in `sweep.png`.")
    tags["mlflow.note.content"] = "\n\n".join(lines)
    return tags


def _prep_cells(r: dict[str, Any]) -> list[str]:
    p = r.get("preprocessing") or {}
    ms = p.get("cpu_ms_per_sample")
    where = str(p.get("placement", ""))
    if p.get("workers") is not None:
        where += f", {p['workers']} workers on {p.get('cores', '?')} cores"
    return ["" if ms is None else f"{ms:.2f}", where]


def _cells(r: dict[str, Any], best: bool) -> list[str]:
    """value, samples/s, 95% CI, input-bound, verdict, CPU (plain text, not yet escaped)."""
    if r["status"] != "complete":
        return [r["value"], "failed", "", "", str(r["error"] or "")[:300], ""]
    cpu = "n/a" if r["cpu_mean_percent"] is None else f"{r['cpu_mean_percent']:.0f}%"
    tput = f"{r['throughput_samples_per_s']:.4g}" + (" (best)" if best else "")
    return [r["value"], tput, ci_text(r), f"{r['input_bound_fraction']:.0%}", str(r["verdict"]), cpu]


def sweep_table(key: str, rows: list[dict[str, Any]], title: str, width: int = PIPE_WIDTH) -> Table:
    """One line per point, fitted to ``width`` characters (:func:`suite.tables.fitted_table`).

    Columns: the value, samples/s (the best marked), its 95% CI, the input-bound
    fraction, the verdict (or the error of a failed point), CPU %, and, when the
    workload reports it, the preprocessing cost (CPU ms per sample) and where it ran.
    Result paths are in ``sweep.json``.
    """
    prep = any(r.get("preprocessing") for r in rows)
    best = best_index(rows)
    cols = [
        Col(key, wrap=True),
        Col("samples/s", justify="right"),
        Col("95% CI", drop=2, justify="right"),
        Col("input-bound", drop=3, justify="right"),
        Col("verdict / error", drop=1, wrap=True),
        Col("CPU", drop=4, justify="right"),
    ]
    if prep:
        cols += [Col("prep ms/sample", drop=5, justify="right"), Col("preprocessing ran in", drop=6, wrap=True)]
    table_rows = []
    for i, r in enumerate(rows):
        cells = _cells(r, i == best) + (_prep_cells(r) if prep else [])
        cells = [rich_escape(markdown.plain(c)) for c in cells]
        if r["status"] != "complete":
            cells[1] = "[red]failed[/red]"
        elif i == best:
            cells[1] = f"[bold]{cells[1]}[/bold]"
        table_rows.append(cells)
    return fitted_table(rich_escape(markdown.plain(title)), cols, table_rows, width)


def sweep_markdown(workload: str, key: str, rows: list[dict[str, Any]]) -> str:
    """The sweep as a Markdown document: what was swept, the best point, and one table row per point."""
    best = best_index(rows)
    e = markdown.escape
    lines = [f"# {e(workload)}: sweep of {e(key)}", ""]
    if best is not None:
        b = rows[best]
        lines += [f"**Best: {e(key)}={e(b['value'])}, {b['throughput_samples_per_s']:.4g} samples/s.**", ""]
    lines += [
        f"| {e(key)} | samples/s | 95% CI | input-bound | verdict / error | CPU | result |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for i, r in enumerate(rows):
        cells = [e(c) for c in _cells(r, i == best)] + [e(r.get("result_path") or "")]
        if i == best:
            cells[1] = f"**{cells[1]}**"
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "95% CI: the throughput's confidence interval from each point's own repeats or batch means "
        "(see each result's `summary.throughput_ci95.method`); `unbounded` where a point's steps vary too much "
        "for their number (raise repeats or measure_steps), `none` where a point has no throughput.",
    ]
    return "\n".join(lines) + "\n"
