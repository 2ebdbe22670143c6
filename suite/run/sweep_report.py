"""A sweep's table (rich) and plot (matplotlib): throughput and input-bound fraction against the swept setting."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from rich.table import Table


def _numeric(values: list[str]) -> list[float] | None:
    try:
        return [float(v) for v in values]
    except ValueError:
        return None


def sweep_table(key: str, rows: list[dict[str, Any]], title: str) -> Table:
    """One line per point: value, samples/s, input-bound %, verdict, CPU %, and, when the
    workload reports it, the preprocessing cost (CPU ms per sample) and where it ran.
    Result paths are in ``sweep.json``."""
    prep = any(r.get("preprocessing") for r in rows)
    t = Table(title=title, title_justify="left")
    t.add_column(key, justify="right")
    t.add_column("samples/s", justify="right")
    t.add_column("input-bound", justify="right")
    t.add_column("verdict")
    t.add_column("CPU", justify="right")
    if prep:
        t.add_column("prep ms/sample", justify="right")
        t.add_column("preprocessing ran in")
    for r in rows:
        if r["status"] != "complete":
            cells = [r["value"], "[red]failed[/red]", "", str(r["error"] or "")[:200], ""]
        else:
            cells = [
                r["value"],
                f"{r['throughput_samples_per_s']:.2f}",
                f"{r['input_bound_fraction']:.0%}",
                str(r["verdict"]),
                "n/a" if r["cpu_mean_percent"] is None else f"{r['cpu_mean_percent']:.0f}%",
            ]
        if prep:
            p = r.get("preprocessing") or {}
            ms = p.get("cpu_ms_per_sample")
            where = str(p.get("placement", ""))
            if p.get("workers") is not None:
                where += f", {p['workers']} workers on {p.get('cores', '?')} cores"
            cells += ["" if ms is None else f"{ms:.2f}", where]
        t.add_row(*cells)
    return t


def sweep_png(key: str, rows: list[dict[str, Any]], path: Path, title: str) -> Path:
    """Write the sweep plot and return ``path``.

    x: the swept values (a numeric axis when all are numbers, else one slot per value).
    Left axis: throughput, samples/s, with its 95% CI where known. Right axis: the
    input-bound fraction, 0-1. Failed points are marked on the x axis with a red x.
    """
    values = [r["value"] for r in rows]
    nums = _numeric(values)
    xs = nums if nums is not None else list(range(len(values)))
    ok = [i for i, r in enumerate(rows) if r["status"] == "complete"]
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=100)
    tput = [rows[i]["throughput_samples_per_s"] for i in ok]
    low = [tput[j] - (rows[i]["throughput_ci95"] or [tput[j], None])[0] for j, i in enumerate(ok)]
    high = [
        (rows[i]["throughput_ci95"][1] - tput[j])
        if rows[i]["throughput_ci95"] and rows[i]["throughput_ci95"][1] is not None
        else 0.0
        for j, i in enumerate(ok)
    ]
    ax.errorbar([xs[i] for i in ok], tput, yerr=[low, high], fmt="o-", color="tab:blue", capsize=3, label="throughput")
    ax.set_xlabel(key)
    ax.set_ylabel("throughput, samples/s", color="tab:blue")
    ax.set_ylim(bottom=0)
    ax2 = ax.twinx()
    ax2.plot(
        [xs[i] for i in ok],
        [rows[i]["input_bound_fraction"] for i in ok],
        "s--",
        color="tab:red",
        label="input-bound fraction",
    )
    ax2.set_ylabel("input-bound fraction (data wait / step time)", color="tab:red")
    ax2.set_ylim(0, 1.05)
    failed = [i for i in range(len(rows)) if i not in ok]
    if failed:
        ax.plot([xs[i] for i in failed], [0] * len(failed), "x", color="red", ms=10, mew=2, label="failed")
    ax.set_xticks(xs)
    ax.set_xticklabels(values)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncols=3, frameon=False, fontsize=8)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
