"""``trainbench ladder WORKLOAD``: climb the workload's optimization ladder (CPU or GPU) on this machine."""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from suite.commands.options import tracking_options
from suite.console import console, stop_on_sigterm
from suite.errors import BadInput, Interrupted, RunFailed, TrackingFailed


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
    help="Rungs to climb, starting at fp32 [default: all; CPU ladder: fp32,bf16,channels_last,compile,allocator,omp; "
    "GPU ladder: fp32,bf16,channels_last,compile,max_autotune,cudagraphs,fused,batch].",
)
@click.option(
    "--batch-sizes",
    metavar="B1,B2,...",
    help="The GPU ladder's batch-size search: sizes per GPU, smallest first, up to the first that does not fit "
    "[default: 128,256,...,4096 on a GPU; twice batch_size with device=cpu].",
)
@click.option(
    "--trajectory-steps",
    type=click.IntRange(2, 1000),
    default=None,
    help="Steps of each rung's loss-trajectory pass, compared with fp32's [default: 8].",
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
    batch_sizes: str | None,
    trajectory_steps: int | None,
    output_dir: Path,
    tracking_uri: str | None,
    no_tracking: bool,
) -> None:
    """Run WORKLOAD once per rung of its optimization ladder (cumulative).

    CPU ladder (resnet50-cpu, numa-ddp; the seed study's): fp32, + bf16, + channels_last,
    + torch.compile, + jemalloc/tcmalloc, + OpenMP pinning. GPU ladder (resnet50-gpu-horovod):
    fp32, + bf16, + channels_last, + torch.compile, + max-autotune, + CUDA graphs, + fused SGD,
    then a batch-size search up to the largest batch that fits.

    A rung that cannot run on this machine (bf16 without native support, no compiler, no
    allocator library, one CPU, no GPU for CUDA graphs) is skipped with the reason. Every rung
    that runs is a real run with its own result file and an MLflow child run under one parent,
    and trains a short loss trajectory from the same seed, compared with fp32's: a rung outside
    the tolerance is invalid and never the best. Prints the table (throughput, 95% CI, ratio to
    fp32, whether each step up is significant, first-step and warm-up seconds, numerics) and
    writes ladder.json, ladder.png and best-config.json (run it again with `trainbench run --config FILE`).
    """
    from suite.ladder.rungs import RungPlan, ladder_for, parse_rungs, this_host
    from suite.ladder.runner import run_ladder
    from suite.ladder.table import ladder_table, method_line
    from suite.run.options import RunOptions
    from suite.run.progress import LiveProgress
    from suite.tracking import default_tracking_uri

    names = parse_rungs(rungs, ladder_for(workload))
    sizes = _sizes(batch_sizes)
    uri = None if no_tracking else (tracking_uri or default_tracking_uri())
    opts = RunOptions(output_dir=output_dir.resolve(), tracking_uri=uri)
    stop_on_sigterm()

    def progress(plan: RungPlan, i: int, n: int) -> AbstractContextManager[Any]:
        console.rule(f"rung {i + 1}/{n}: {plan.label} ({', '.join(plan.adds)})", align="left")
        assert plan.config is not None
        return LiveProgress(plan.config, console)

    host = this_host()
    out = run_ladder(workload, profile, list(overrides), names, opts, host, progress, sizes, trajectory_steps)
    console.print(ladder_table(out))
    method = method_line(out)
    if method:
        console.print(escape(method), highlight=False)
    for r in out.rungs:
        if r.plan.skip:
            console.print(f"skipped {escape(r.plan.label)}: {escape(r.plan.skip)}")
        elif r.over_limit:
            console.print(f"did not fit {escape(r.plan.label)}: {escape(str(r.error))}")
        elif not r.complete:
            console.print(f"[red]failed[/red] {escape(r.plan.label)}: {escape(str(r.error))}")
        elif r.numerics is not None and not r.numerics.valid:
            console.print(f"[red]invalid[/red] {escape(r.plan.label)}: {escape(str(r.numerics.reason))}")
        elif r.result is not None and r.result.diagnosis is not None and r.result.diagnosis.disturbed:
            console.print(f"[red]disturbed[/red] {escape(r.plan.label)}: {escape(r.result.diagnosis.message)}")
    console.print(f"ladder: {out.json_path}\nplot: {out.plot_path}")
    if out.config_path is not None and out.best is not None:
        console.print(
            f"best: {escape(out.rungs[out.best].plan.label)} -> {out.config_path}\n"
            f"run it again: trainbench run --config {out.config_path}"
        )
    no_valid = out.best is None and any(r.complete for r in out.rungs)
    if out.parent_run_id:
        ran = sum(1 for r in out.rungs if r.plan.skip is None)
        console.print(f"MLflow parent run {out.parent_run_id} ({ran} child runs) in {uri}")
    if out.interrupted:
        raise Interrupted("the ladder was interrupted; the rungs above the interrupted one did not run")
    if no_valid:
        raise RunFailed("no rung that ran is valid: none shows it trains the same model as fp32 (see above)")
    if out.failed:
        raise RunFailed(f"{len(out.failed)} rung(s) failed: {', '.join(r.plan.name for r in out.failed)}")
    if out.tracking_error:
        raise TrackingFailed(f"{out.tracking_error}\nThe results are safe on disk.")


def _sizes(text: str | None) -> list[int] | None:
    """``--batch-sizes`` as integers (None when not given).

    Raises:
        BadInput: not a comma-separated list of integers.
    """
    if not text:
        return None
    try:
        return [int(b) for b in text.split(",") if b.strip()]
    except ValueError:
        raise BadInput(f"--batch-sizes {text!r}: expected integers such as 128,256,512") from None


COMMANDS = (ladder,)
"""This area's commands (registered by :mod:`suite.commands`)."""
