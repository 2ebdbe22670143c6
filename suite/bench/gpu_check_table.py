"""The GPU check's one table and its closing lines: each goal of issues 34 and 37 against the figures.

Goals (issue 37, on one H100): the ladder's best through trainbench >= 6,000 images/s (stretch
7,200, MLPerf v4.0's per-H100 figure), harness/bare >= 0.99 at every rung. Issue 34:
``dataloader`` >= 2,500 images/s, ``dali`` >= 90% of the synthetic ceiling eager and compiled,
and ``tfdata-service`` lifting ``dataloader`` by what the added cores predict.
"""

from __future__ import annotations

import os
from typing import Any

from rich.markup import escape
from rich.table import Table

from suite.bench.gpu_check import CheckRow
from suite.bench.pipelines import Row
from suite.bench.pipelines_report import verdict
from suite.ladder.numerics import TOLERANCE, deviation

GOAL_BEST = 6000.0
STRETCH_BEST = 7200.0
GOAL_DATALOADER = 2500.0
GOAL_DALI_SHARE = 0.90
GOAL_RATIO = 0.99

COLUMNS = (
    "row", "images/s", "of ceiling", "harness/bare (95% CI)", "first step s", "GPU step ms", "host launch ms",
    "input-bound", "CPU cores", "GPU util", "W", "samples/J", "loss vs fp32", "note",
)  # fmt: skip


def _f(v: Any, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def _loss_check(row: CheckRow, fp32: list[float] | None) -> tuple[str, bool | None]:
    """The loss trajectory's deviation from fp32's (:mod:`suite.ladder.numerics`), and whether it is within."""
    losses = row.figures.get("losses")
    if row.name == "fp32" or not losses or not fp32 or any(v is None for v in (*losses, *fp32)):
        return ("reference" if row.name == "fp32" and losses else "-"), None
    d = deviation(fp32, losses)
    return f"{d:.3f} {'ok' if d <= TOLERANCE else 'INVALID'}", d <= TOLERANCE


def table(rows: list[CheckRow]) -> Table:
    """One line per row: a rung's in-process figures, or a pipeline's run."""
    title = "make gpu-check: ResNet-50 on this GPU (rungs: synthetic, in one process; pipelines: trainbench run)"
    t = Table(title=title)
    for c in COLUMNS:
        t.add_column(c, justify="left" if c in ("row", "note") else "right")
    fp32 = next((r.figures.get("losses") for r in rows if r.name == "fp32"), None)
    for r in rows:
        g = r.figures
        summary = g.get("summary")
        ratio = "-"
        if summary:
            low, high = summary.get("low"), summary.get("high")
            bounds = f" [{low:.3f}-{high:.3f}]" if low is not None and high is not None else " [unbounded]"
            ratio = f"{summary['median']:.3f}{bounds}"
        loss, _ = _loss_check(r, fp32)
        t.add_row(
            r.name,
            _f(g.get("harness", g.get("images_per_s")), ",.0f"),
            _f(g.get("ceiling_share"), ".0%"),
            ratio,
            _f(g.get("first_step_s"), ".1f"),
            _f(g.get("device_step_ms"), ".1f"),
            _f(g.get("host_step_ms"), ".1f"),
            _f(g.get("input_bound"), ".0%"),
            _f(g.get("cores_used"), ".1f"),
            _f(g.get("util_percent_mean"), ".0f"),
            _f(g.get("power_w", g.get("power_w_mean")), ".0f"),
            _f(g.get("samples_per_joule"), ".2f"),
            loss,
            escape((r.note or "")[:160]),
        )
    return t


def goals(rows: list[CheckRow]) -> list[str]:
    """Each goal against the figures, in words (met / missed / not measured)."""
    fp32 = next((r.figures.get("losses") for r in rows if r.name == "fp32"), None)
    rungs = [r for r in rows if r.kind == "rung" and r.figures.get("harness")]
    valid = [r for r in rungs if _loss_check(r, fp32)[1] is not False]
    lines = []
    if valid:
        best = max(valid, key=lambda r: r.figures["harness"])
        v = best.figures["harness"]
        state = "met" if v >= GOAL_BEST else "missed"
        stretch = ", and the stretch 7,200" if v >= STRETCH_BEST else ""
        lines.append(f"ladder best: {best.name} at {v:,.0f} images/s: the goal of {GOAL_BEST:,.0f} {state}{stretch}")
    else:
        lines.append("ladder best: no rung measured")
    low = [r.name for r in rungs if r.figures.get("summary") and r.figures["summary"]["median"] < GOAL_RATIO]
    unbounded = [r.name for r in rungs if not r.figures.get("summary")]
    lines.append(
        f"harness/bare >= {GOAL_RATIO} at every rung measured ({len(rungs)}): "
        + ("met" if not low else f"missed at {', '.join(low)}")
        + (f"; no ratio at {', '.join(unbounded)} (fewer than two pairs)" if unbounded else "")
    )
    by_name = {r.name: r for r in rows if r.kind == "pipeline"}
    dl = by_name.get("dataloader")
    if dl is not None and dl.figures.get("images_per_s"):
        v = dl.figures["images_per_s"]
        state = "met" if v >= GOAL_DATALOADER else "missed"
        lines.append(f"dataloader: {v:,.0f} images/s: the goal of {GOAL_DATALOADER:,.0f} {state}")
    for name in ("dali", "dali (compiled)"):
        share = by_name[name].figures.get("ceiling_share") if name in by_name else None
        if share is not None:
            state = "met" if share >= GOAL_DALI_SHARE else "missed"
            lines.append(f"{name}: {share:.0%} of its ceiling: the goal of {GOAL_DALI_SHARE:.0%} {state}")
    eager = [Row(**{k: v for k, v in r.figures.items() if k in Row.__dataclass_fields__}, error=r.note)
             for r in rows if r.kind == "pipeline" and r.figures and "(" not in r.name]  # fmt: skip
    if eager:
        lines += verdict(eager, len(os.sched_getaffinity(0)))
    return lines
