"""Climbing the ladder: every rung a real run, the comparisons between them, and the best config.

Each rung that can help here runs through :func:`suite.run.execute.execute` (its own result
file, and an MLflow child run under the ladder's parent). The batch-size search stops at the
first size that runs out of memory (the sizes above it are skipped, with that reason). Then
the rungs are compared and their loss trajectories checked (:mod:`suite.ladder.outcome`), and
``ladder.json`` (every rung, skipped ones with their reason), ``ladder.png`` and
``best-config.json`` (:mod:`suite.run.config_file`: ``trainbench run --config``) are written
beside the rungs' result directories and logged to the parent run.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from suite.config import RunConfig
from suite.errors import TrackingError
from suite.ladder.outcome import LadderOutcome, RungOutcome, best_rung, check_numerics, compare_rungs
from suite.ladder.rungs import Host, RungPlan, ladder_for, plan_ladder
from suite.ladder.table import write_outputs
from suite.results import Result, ResultError, read_result
from suite.run.execute import execute
from suite.run.options import ProgressCallback, RunError, RunOptions, new_stamped_dir

Progress = Callable[[RungPlan, int, int], AbstractContextManager[ProgressCallback | None]]
"""Called with (rung, its number among the rungs that run, how many run); the context it
returns is held open while the rung runs and receives its progress events."""


def _kept(exc: RunError) -> Result | None:
    if exc.result_path is None:
        return None
    with contextlib.suppress(ResultError):
        return read_result(exc.result_path)
    return None


def run_ladder(
    workload: str,
    profile: str | None,
    overrides: list[str],
    names: list[str],
    opts: RunOptions,
    host: Host,
    progress: Progress | None = None,
    batch_sizes: list[int] | None = None,
    trajectory_steps: int | None = None,
) -> LadderOutcome:
    """Climb the ladder: run every rung that can help here, compare, write the files, log the parent.

    Args:
        batch_sizes, trajectory_steps: see :func:`suite.ladder.rungs.plan_ladder`.

    Raises:
        ConfigError: a rung's config is invalid (before anything runs).
        PreflightError, suite.cost.PriceTableError, suite.launchers.LaunchError: from the first rung's preflight.
    """
    plans = plan_ladder(workload, profile, overrides, names, host, batch_sizes, trajectory_steps)
    title = ladder_for(workload).title
    out = LadderOutcome(workload, profile, list(overrides), [RungOutcome(p) for p in plans], title=title)
    out.directory = new_stamped_dir(opts.output_dir / workload, "ladder-")
    rung_opts = _start_parent(out, plans[0].config, opts)
    running = [r for r in out.rungs if r.plan.config is not None]
    try:
        for i, rung in enumerate(running):
            config: RunConfig | None = rung.plan.config
            if config is None:  # a batch size above one that did not fit
                continue
            watch = progress(rung.plan, i, len(running)) if progress is not None else contextlib.nullcontext(None)
            try:
                with watch as on_progress:
                    run = execute(config, rung_opts, on_progress)
                rung.result, rung.result_path = run.result, run.result_path
                out.tracking_error = out.tracking_error or run.tracking_error
            except RunError as exc:
                rung.error, rung.result_path, rung.result = str(exc), exc.result_path, _kept(exc)
                if exc.exit_code == 130:
                    out.interrupted = True
                    break
                if rung.plan.family == "batch" and _out_of_memory(rung):
                    rung.over_limit = True
                    _skip_larger(running[i + 1 :], rung)
    except BaseException:
        _finish_parent(out, opts, [], "FAILED")  # a preflight error or a crash: the parent must not stay RUNNING
        raise
    compare_rungs(out.rungs)
    check_numerics(out.rungs)
    out.best = best_rung(out.rungs)
    artifacts = write_outputs(out)
    status = "KILLED" if out.interrupted else ("FAILED" if out.failed else "FINISHED")
    _finish_parent(out, opts, artifacts, status)
    return out


def _out_of_memory(rung: RungOutcome) -> bool:
    """The rung's run failed because it ran out of memory (the rank's error says so)."""
    kept = rung.result.error if rung.result is not None else None
    return "out of memory" in f"{rung.error} {kept or ''}".lower()


def _skip_larger(rest: list[RungOutcome], failed: RungOutcome) -> None:
    """Skip the batch sizes above one that did not fit (before they run)."""
    for r in rest:
        if r.plan.family == "batch":
            r.plan.skip = f"{failed.plan.label.removeprefix('+ ')} did not fit in memory, so larger ones are not tried"
            r.plan.config = None


def _start_parent(out: LadderOutcome, first: RunConfig | None, opts: RunOptions) -> RunOptions:
    """Start the MLflow parent run (when tracking); the options each rung runs with."""
    if not opts.tracking_uri:
        return opts
    from suite.tracking import start_parent_run

    params = {
        "ladder.rungs": ",".join(r.plan.name for r in out.rungs),
        "ladder.skipped": ",".join(r.plan.name for r in out.rungs if r.plan.skip) or "none",
        "profile": first.profile if first is not None else str(out.profile),
    } | {f"set.{i}": o for i, o in enumerate(out.overrides)}
    params |= {f"skip.{r.plan.name}": str(r.plan.skip)[:400] for r in out.rungs if r.plan.skip}
    try:
        out.parent_run_id = start_parent_run(
            out.workload, f"{out.workload}-ladder", params, opts.tracking_uri, kind="ladder"
        )
    except TrackingError as exc:
        out.tracking_error = str(exc)
        return dataclasses.replace(opts, tracking_uri=None)
    return dataclasses.replace(opts, parent_run_id=out.parent_run_id)


def _finish_parent(out: LadderOutcome, opts: RunOptions, artifacts: list[Path], status: str) -> None:
    if not (out.parent_run_id and opts.tracking_uri):
        return
    from suite.tracking import finish_parent_run

    metrics: list[tuple[str, float, int]] = []
    for i, r in enumerate(out.rungs):
        s = r.result.summary if r.result is not None else None
        if s is not None:
            metrics.append(("ladder_throughput_samples_per_s", s.throughput, i))
        if r.vs_fp32 is not None:
            metrics.append(("ladder_ratio_to_fp32", r.vs_fp32.ratio, i))
        if r.numerics is not None and r.numerics.deviation is not None:
            metrics.append(("ladder_loss_deviation", r.numerics.deviation, i))
    if out.best is not None:
        metrics.append(("ladder_best_rung", float(out.best), 0))
    try:
        finish_parent_run(out.parent_run_id, metrics, artifacts, status, opts.tracking_uri)
    except TrackingError as exc:
        out.tracking_error = out.tracking_error or str(exc)
