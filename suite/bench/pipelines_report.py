"""The table, the verdict in words and the JSON of ``trainbench bench-pipelines`` (:mod:`suite.bench.pipelines`)."""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from suite.bench.pipelines import BenchSettings, Row, check_settings, run_pipelines
from suite.run.diagnosis import DECISIVE_CI
from suite.runtimes.base import Runtime


def rate(images_per_s: float) -> str:
    """images/s with three significant figures at least: 5,211 / 372 / 0.84."""
    return f"{images_per_s:,.0f}" if images_per_s >= 100 else f"{images_per_s:.3g}"


def _by_name(rows: list[Row], name: str) -> Row | None:
    return next((r for r in rows if r.pipeline == name), None)


def preprocessing_cores(rows: list[Row]) -> float | None:
    """Cores per GPU the DataLoader's preprocessing needs at the synthetic rate, or None when not measurable.

    The DataLoader row's trainer tree used ``cores_used``, of which the synthetic row's (the
    training process itself) are not preprocessing; the rest, over its images/s, is CPU-seconds
    per image, and the synthetic rate per GPU times that is the cores one GPU needs to be fed.
    """
    syn, dl = _by_name(rows, "synthetic"), _by_name(rows, "dataloader")
    if syn is None or dl is None or not syn.images_per_s or not dl.images_per_s:
        return None
    if syn.cores_used is None or dl.cores_used is None:
        return None
    per_image = max(dl.cores_used - syn.cores_used, 0.0) / dl.images_per_s
    return per_image * syn.images_per_s / max(1, syn.world_size)


def verdict(rows: list[Row], host_cores: int) -> list[str]:
    """The answer in words: cores the preprocessing needs per GPU against the host's, each pipeline's share
    of the ceiling, the cheapest per image, and which figures are not decisive (CI wider than +-5%)."""
    syn = _by_name(rows, "synthetic")
    if syn is None or not syn.images_per_s:
        return ["the synthetic ceiling was not measured, so nothing can be compared with it"]
    per_gpu = syn.images_per_s / max(1, syn.world_size)
    lines = []
    need = preprocessing_cores(rows)
    if need is not None:
        enough = "enough" if need <= host_cores else "too few: offload it (tfdata-service) or decode on the GPU (dali)"
        lines.append(
            f"this preprocessing needs about {need:.1f} cores per GPU at the synthetic rate "
            f"({rate(per_gpu)} images/s per GPU); this host has {host_cores}: {enough}"
        )
    for r in rows[1:]:
        if r.images_per_s is None:
            lines.append(f"{r.pipeline} was not measured: {(r.error or 'unknown').splitlines()[0][:300]}")
            continue
        share = f"{r.ceiling_share:.0%}" if r.ceiling_share is not None else "?"
        extra = f", with {r.service_cores} service cores" if r.service_cores else ""
        figures = f"{rate(r.images_per_s)} images/s, {r.verdict}{extra}"
        lines.append(f"{r.pipeline} reaches {share} of the ceiling ({figures})")
    priced = [r for r in rows[1:] if r.samples_per_dollar is not None]
    if priced:
        best = max(priced, key=lambda r: r.samples_per_dollar or 0.0)
        lines.append(f"cheapest per image with real JPEGs: {best.pipeline} ({best.samples_per_dollar:,.0f} images/$)")
    wide = [r for r in rows if r.images_per_s is not None and (r.ci_rel is None or r.ci_rel > DECISIVE_CI)]
    if wide:
        names = ", ".join(f"{r.pipeline} ({'unbounded' if r.ci_rel is None else f'±{r.ci_rel:.0%}'})" for r in wide)
        lines.append(
            f"not decisive: the 95% CI of {names} is wider than ±{DECISIVE_CI:.0%}; lengthen the windows "
            "(--set measure_seconds=...) or add repeats (--set repeats=5)"
        )
    return lines


def table(rows: list[Row]) -> Table:
    """One line per pipeline."""
    t = Table(title="input pipelines against the synthetic ceiling (resnet50-gpu-horovod, each via `trainbench run`)")
    cols = ("pipeline", "images/s", "of ceiling", "input-bound", "95% CI", "trainer cores", "service cores",
            "USD/h", "images/$", "diagnosis")  # fmt: skip
    for c in cols:
        t.add_column(c, justify="left" if c in ("pipeline", "diagnosis") else "right")

    def fmt(v: float | int | None, spec: str) -> str:
        return "-" if v is None else format(v, spec)

    for r in rows:
        if r.images_per_s is None:
            t.add_row(r.pipeline, "[red]failed[/red]", *[""] * 7, escape((r.error or "")[:120]))
            continue
        t.add_row(
            r.pipeline,
            rate(r.images_per_s),
            fmt(r.ceiling_share, ".0%"),
            fmt(r.input_bound, ".0%"),
            "unbounded" if r.ci_rel is None else f"±{r.ci_rel:.1%}",
            fmt(r.cores_used, ".1f"),
            fmt(r.service_cores, "d"),
            fmt(r.usd_per_hour, ".3f"),
            fmt(r.samples_per_dollar, ",.0f"),
            escape(r.verdict or ""),
        )
    return t


def main(settings: BenchSettings, output_dir: Path, runtime: Runtime | None = None) -> dict[str, Any]:
    """Run every row, print the table and the verdict, write ``output_dir/bench-pipelines.json``.

    Returns:
        ``{"settings", "host_cores", "rows", "verdict", "complete", "path"}``; ``complete`` is False
        when Ctrl-C or SIGTERM stopped the runs (the rows measured are kept).

    Raises:
        suite.errors.BadInput, suite.specs.ConfigError, suite.cost.PriceTableError: before anything runs.
    """
    console = Console()
    check_settings(settings)  # bad input fails here, before a directory or a run
    output_dir.mkdir(parents=True, exist_ok=True)
    path = output_dir / "bench-pipelines.json"
    host_cores = len(os.sched_getaffinity(0))
    rows: list[Row] = []
    complete = True
    try:
        run_pipelines(settings, output_dir, console, runtime, rows)
    except KeyboardInterrupt:
        complete = False
        console.print(f"[yellow]bench-pipelines interrupted after {len(rows)} row(s)[/yellow]")
    console.print(table(rows))
    words = verdict(rows, host_cores)
    for line in words:
        console.print(escape(line))
    doc: dict[str, Any] = {
        "settings": {**asdict(settings), "data_dir": str(settings.data_dir)},
        "host_cores": host_cores,
        "rows": [asdict(r) for r in rows],
        "verdict": words,
        "complete": complete,
        "path": str(path),
    }
    with contextlib.suppress(OSError):
        path.write_text(json.dumps(doc, indent=1) + "\n")
    console.print(f"figures: {path}")
    return doc
