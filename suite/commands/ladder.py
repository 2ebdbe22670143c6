"""``trainbench ladder WORKLOAD``: climb the CPU optimization ladder on this machine."""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from suite.commands.options import tracking_options
from suite.console import console, stop_on_sigterm
from suite.errors import Interrupted, RunFailed, TrackingFailed


@click.command()
@click.argument("workload")
@click.option("--profile", "-p", help="Profile every rung runs with (default: the spec's default, usually quick).")
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="An extra setting for every rung, e.g. --set batch_size=32 (repeatable); not one the ladder sets.",
)
@click.option(
    "--rungs",
    metavar="R1,R2,...",
    help="Rungs to climb, starting at fp32 [default: fp32,bf16,channels_last,compile,allocator,omp].",
)
@click.option(
    "--output-dir",
    type=click.Path(path_type=Path),
    default=Path("results"),
    show_default=True,
    help="Where the rungs' results and the ladder's files are written.",
)
@tracking_options("the result files are")
def ladder(
    workload: str,
    profile: str | None,
    overrides: tuple[str, ...],
    rungs: str | None,
    output_dir: Path,
    tracking_uri: str | None,
    no_tracking: bool,
) -> None:
    """Run WORKLOAD once per rung of the seed study's ladder: fp32, + bf16, + channels_last, + torch.compile,
    + jemalloc/tcmalloc, + OpenMP pinning (cumulative).

    A rung that cannot help on this machine (bf16 without native support, no C++ compiler,
    no allocator library, one CPU) is skipped with the reason. Every rung that runs is a real
    run with its own result file and an MLflow child run under one parent. Prints the table
    (throughput, 95% CI, ratio to fp32, and whether each step up is significant) and writes
    ladder.json, ladder.png and best-config.json (run it again with `trainbench run --config FILE`).
    """
    from suite.ladder.rungs import RungPlan, parse_rungs, this_host
    from suite.ladder.runner import run_ladder
    from suite.ladder.table import ladder_table
    from suite.run.options import RunOptions
    from suite.run.progress import LiveProgress
    from suite.tracking import default_tracking_uri

    names = parse_rungs(rungs)
    uri = None if no_tracking else (tracking_uri or default_tracking_uri())
    opts = RunOptions(output_dir=output_dir.resolve(), tracking_uri=uri)
    stop_on_sigterm()

    def progress(plan: RungPlan, i: int, n: int) -> AbstractContextManager[Any]:
        console.rule(f"rung {i + 1}/{n}: {plan.label} ({', '.join(plan.adds)})", align="left")
        assert plan.config is not None
        return LiveProgress(plan.config, console)

    host = this_host()
    out = run_ladder(workload, profile, list(overrides), names, opts, host, progress)
    console.print(ladder_table(out))
    for r in out.rungs:
        if r.plan.skip:
            console.print(f"skipped {escape(r.plan.label)}: {escape(r.plan.skip)}")
        elif not r.complete:
            console.print(f"[red]failed[/red] {escape(r.plan.label)}: {escape(str(r.error))}")
        elif r.result is not None and r.result.diagnosis is not None and r.result.diagnosis.disturbed:
            console.print(f"[red]disturbed[/red] {escape(r.plan.label)}: {escape(r.result.diagnosis.message)}")
    console.print(f"ladder: {out.json_path}\nplot: {out.plot_path}")
    if out.config_path is not None and out.best is not None:
        console.print(
            f"best: {escape(out.rungs[out.best].plan.label)} -> {out.config_path}\n"
            f"run it again: trainbench run --config {out.config_path}"
        )
    if out.parent_run_id:
        ran = sum(1 for r in out.rungs if r.plan.skip is None)
        console.print(f"MLflow parent run {out.parent_run_id} ({ran} child runs) in {uri}")
    if out.interrupted:
        raise Interrupted("the ladder was interrupted; the rungs above the interrupted one did not run")
    if out.failed:
        raise RunFailed(f"{len(out.failed)} rung(s) failed: {', '.join(r.plan.name for r in out.failed)}")
    if out.tracking_error:
        raise TrackingFailed(f"{out.tracking_error}\nThe results are safe on disk.")


COMMANDS = (ladder,)
"""This area's commands (registered by :mod:`suite.commands`)."""
