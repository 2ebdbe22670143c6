"""``trainbench run WORKLOAD --sweep KEY=V1,V2,...``: console side of :mod:`suite.sweep`."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from rich.console import Console

from suite.console import error
from suite.cost import PriceTableError
from suite.launch import LaunchError
from suite.runner import PreflightError, RunOptions
from suite.specs import ConfigError, RunConfig
from suite.sweep import parse_sweep, run_sweep


def run_sweep_command(
    workload: str, profile: str | None, overrides: list[str], sweep_text: str, opts: RunOptions, console: Console
) -> int:
    """Run the sweep, print its table and files; return the exit code.

    Returns:
        0 every point complete; 1 a point failed (its error is in the table); 2 bad
        input (nothing ran); 3 every point complete but MLflow could not record them
        all; 130 interrupted.
    """
    from suite.report import LiveProgress
    from suite.sweep_report import sweep_table

    try:
        spec = parse_sweep(sweep_text)
    except ConfigError as exc:
        error(str(exc))
        return 2

    def progress(i: int, value: str, config: RunConfig) -> AbstractContextManager[Any]:
        console.print(f"[bold]sweep point {i + 1}/{len(spec.values)}: {spec.key}={value}[/bold]")
        return LiveProgress(config, console)

    try:
        out = run_sweep(workload, profile, overrides, spec, opts, progress)
    except (ConfigError, PreflightError, PriceTableError, LaunchError) as exc:
        error(str(exc))
        return 2
    assert out.json_path is not None and out.plot_path is not None
    rows = [p.row() for p in out.points]
    console.print(sweep_table(spec.key, rows, f"{workload}: sweep of {spec.key}"))
    console.print(f"sweep: {out.json_path}\nplot: {out.plot_path}")
    if out.parent_run_id:
        console.print(f"MLflow parent run {out.parent_run_id} ({len(out.points)} child runs) in {opts.tracking_uri}")
    if out.interrupted:
        error(f"the sweep was interrupted after {len(out.points)} points")
        return 130
    if out.failed:
        bad = ", ".join(f"{spec.key}={p.value}" for p in out.failed)
        error(f"{len(out.failed)} of {len(out.points)} points failed: {bad}")
        return 1
    if out.tracking_error:
        error(f"{out.tracking_error}\nThe results are safe on disk.")
        return 3
    return 0
