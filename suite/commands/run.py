"""``trainbench run`` (one run, or a sweep of one setting), ``trainbench sync`` (the tracking outbox)
and the hidden ``trainbench rank`` (what a launcher or container executes)."""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from suite.commands.options import Runtime, runtime_options, tracking_options
from suite.console import console, stop_on_sigterm, warn
from suite.errors import Interrupted, RunFailed, TrackingFailed
from suite.extras import require
from suite.run.options import ResultElsewhere, RunOptions
from suite.runtimes.local import LocalRuntime
from suite.runtimes.slurm import SlurmRuntime
from suite.specs import RunConfig, resolve


@click.command()
@click.argument("workload", required=False)
@click.option(
    "--config",
    "config_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A run-config file (workload, profile and overrides; `trainbench ladder` writes one): run it. "
    "--profile and --set given here apply on top of it.",
)
@click.option("--profile", "-p", help="Profile of the workload spec (default: the spec's default, usually quick).")
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a setting, e.g. --set batch_size=32 --set allocator=jemalloc (repeatable).",
)
@click.option(
    "--output-dir",
    type=click.Path(path_type=Path),
    default=Path("results"),
    show_default=True,
    help="Where result files are written.",
)
@tracking_options("the result JSON is")
@click.option("--system", help="System name recorded in the result [default: host name].")
@click.option("--price-per-hour", type=float, help="Machine price in USD/hour, for samples per dollar.")
@click.option("--instance-type", help="Look the price up in the price table (see `trainbench prices`).")
@click.option("--pricing", type=click.Choice(["on-demand", "spot"]), default="on-demand", show_default=True)
@click.option("--region", help="Region for the price-table lookup.")
@click.option(
    "--sweep",
    metavar="KEY=V1,V2,...",
    help="Run once per value of one setting (e.g. num_workers=0,1,2); each point is a child MLflow run "
    "under one parent; prints a table and writes a plot of throughput and input-bound fraction.",
)
@runtime_options(slurm=True)
def run(
    workload: str | None,
    config_file: Path | None,
    profile: str | None,
    overrides: tuple[str, ...],
    output_dir: Path,
    tracking_uri: str | None,
    no_tracking: bool,
    system: str | None,
    price_per_hour: float | None,
    instance_type: str | None,
    pricing: str,
    region: str | None,
    runtime: Runtime,
    sweep: str | None,
) -> None:
    """Run WORKLOAD (or the run config of --config FILE) through the harness, write its result JSON
    and log it to MLflow.

    With --runtime slurm (or --launcher slurm) the run is submitted as a Slurm job and followed
    from here; see the README's "Slurm clusters" section.
    """
    from suite.run.config_file import from_config_file
    from suite.run.sweep import first_point

    started = _command_start()
    workload, profile, overrides = from_config_file(workload, config_file, profile, overrides)
    # with --sweep, the first point stands for all (each is resolved again by the sweep)
    config = resolve(workload, profile, [*overrides, *first_point(sweep)])
    # the optional parts of the install this run needs, checked before anything starts
    slurm = runtime if isinstance(runtime, SlurmRuntime) else None
    if slurm is not None and slurm.dry_run:
        _dry_run(config, slurm, output_dir.resolve())
        return
    if isinstance(runtime, LocalRuntime):  # the rank runs here: its framework must be installed here
        require("offload" if config.image.split(":")[0] == "trainbench-tf" else "train", "trainbench run")
    elif slurm is None:
        require("containers", "trainbench run --runtime docker")
    require("plots", "trainbench run (its timeline plot)")
    if not no_tracking:
        require("tracking", "trainbench run without --no-tracking")
    from suite.run.execute import execute
    from suite.run.progress import LiveProgress, summary_table

    if no_tracking:
        uri = None
    else:
        from suite.tracking import default_tracking_uri

        uri = tracking_uri or default_tracking_uri()
    report_lost_runs(output_dir)
    opts = RunOptions(
        output_dir=output_dir.resolve(),
        tracking_uri=uri,
        system=system,
        price_per_hour=price_per_hour,
        instance_type=instance_type,
        pricing=pricing,
        region=region,
        runtime=runtime,
        started_unix_s=started,
        notify=lambda line: console.print(escape(line), highlight=False),
    )
    stop_on_sigterm()
    if sweep:
        _sweep(workload, profile, list(overrides), sweep, opts)
        return
    try:
        with LiveProgress(config, console) as live:
            outcome = execute(config, opts, live)
    except ResultElsewhere as exc:
        console.print(escape(str(exc)))
        return
    console.print(summary_table(outcome.result))
    console.print(f"result: {outcome.result_path}\ntimeline: {outcome.timeline_path}")
    from suite.ladder.best import distance_to_best

    best = distance_to_best(outcome.result, opts.output_dir)  # the ladder's best on this device, when known
    if best is not None:
        console.print(escape(best.text()), soft_wrap=True)
    if outcome.mlflow_run_id and uri:
        from suite.tracking import ui_hint

        hint = ui_hint(uri, outcome.mlflow_run_id)
        console.print(escape(f"MLflow run {outcome.mlflow_run_id} in {uri}\n{hint}"), soft_wrap=True)
    if outcome.tracking_error:
        raise TrackingFailed(f"{outcome.tracking_error}\nThe result itself is safe in {outcome.result_path}.")


def _command_start() -> float:
    """When this command's process started (seconds since the epoch): a profile's time budget counts from it."""
    import time

    import psutil

    try:
        return float(psutil.Process().create_time())
    except psutil.Error:
        return time.time()


def _dry_run(config: RunConfig, slurm: SlurmRuntime, output_dir: Path) -> None:
    """Print the batch script of the run, with the run directory it would get; submit nothing."""
    run_dir = output_dir / config.workload / "<stamp>-<run id>"
    console.print(slurm.dry_run_script(config, run_dir), markup=False, highlight=False, soft_wrap=True)
    console.print(
        f"# dry run: nothing was submitted; a run writes the job file and the script into {run_dir}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )


def report_lost_runs(output_dir: Path) -> None:
    """Keep the runs under ``output_dir`` whose supervisor died as incomplete results, and say so
    (:mod:`suite.run.recover`)."""
    from suite.run.recover import recover

    for lost in recover(output_dir):
        if lost.path is not None:
            warn(
                f"run {lost.run_dir} lost its supervisor; its {lost.steps} measured steps are kept, "
                f"marked incomplete, in {lost.path}"
            )
        else:
            warn(f"run {lost.run_dir}: {lost.note}")


def _sweep(workload: str, profile: str | None, overrides: list[str], sweep_text: str, opts: RunOptions) -> None:
    """Run a sweep, print its table and files.

    Raises:
        suite.specs.ConfigError: the sweep or a point is invalid (nothing ran).
        RunFailed: a point failed (its error is in the table).
        TrackingFailed: every point is complete, but MLflow could not record them all.
        Interrupted: Ctrl-C or SIGTERM; the points after the interrupted one did not run.
    """
    from suite.run.progress import LiveProgress
    from suite.run.sweep import parse_sweep, run_sweep
    from suite.run.sweep_table import sweep_table
    from suite.tables import layout_width, print_table

    spec = parse_sweep(sweep_text)

    def progress(i: int, value: str, config: RunConfig) -> AbstractContextManager[Any]:
        console.print(f"[bold]sweep point {i + 1}/{len(spec.values)}: {spec.key}={value}[/bold]")
        return LiveProgress(config, console)

    out = run_sweep(workload, profile, overrides, spec, opts, progress)
    rows = [p.row() for p in out.points]
    print_table(console, sweep_table(spec.key, rows, f"{workload}: sweep of {spec.key}", layout_width(console)))
    console.print(escape(f"sweep: {out.json_path}, {out.markdown_path}\nplot: {out.plot_path}"), soft_wrap=True)
    if out.parent_run_id and opts.tracking_uri:
        from suite.tracking import ui_hint

        console.print(
            escape(
                f"MLflow parent run {out.parent_run_id} ({len(out.points)} child runs) in {opts.tracking_uri}\n"
                + ui_hint(opts.tracking_uri, out.parent_run_id)
            ),
            soft_wrap=True,  # a command and a URL to copy: never broken mid-word
        )
    if out.interrupted:
        raise Interrupted(f"the sweep was interrupted after {len(out.points)} points")
    if out.failed:
        bad = ", ".join(f"{spec.key}={p.value}" for p in out.failed)
        raise RunFailed(f"{len(out.failed)} of {len(out.points)} points failed: {bad}")
    if out.tracking_error:
        raise TrackingFailed(f"{out.tracking_error}\nThe results are safe on disk.")


@click.command(
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    add_help_option=False,
    hidden=True,
)
@click.pass_context
def rank(ctx: click.Context) -> None:
    """Run one rank (``workloads.rank``): the command a launcher or container executes.

    Arguments: --job JOB.json --out MEASUREMENT.json [--progress PROGRESS.jsonl].
    """
    from workloads.rank import main as rank_main

    sys.exit(rank_main(list(ctx.args)))


@click.command()
@click.option(
    "--output-dir",
    type=click.Path(path_type=Path),
    default=Path("results"),
    show_default=True,
    help="Result root whose outbox is drained.",
)
@click.option("--tracking-uri", help="Send every queued run here instead of to the URI it was meant for.")
def sync(output_dir: Path, tracking_uri: str | None) -> None:
    """Log the runs queued in the outbox while the tracking server was unreachable (idempotent).

    Runs under the output directory whose supervisor died are first kept as incomplete results.
    """
    from suite.run.outbox import pending
    from suite.run.outbox import sync as sync_outbox

    report_lost_runs(output_dir)
    if not pending(output_dir):
        console.print(f"nothing queued in {output_dir}")
        return
    outcomes = sync_outbox(output_dir, tracking_uri)
    t = Table("entry", "status", "detail")
    for o in outcomes:
        t.add_row(o.entry.name, o.status, o.detail)
    console.print(t)
    left = [o for o in outcomes if o.status != "logged"]
    if left:
        raise TrackingFailed(f"{len(left)} of {len(outcomes)} queued runs could not be logged; they stay queued")


COMMANDS = (run, rank, sync)
"""This area's commands (registered by :mod:`suite.commands`)."""
