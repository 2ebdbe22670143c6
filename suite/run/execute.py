"""One trainbench run end to end: preflight, claim, run through the runtime, build the result, finish.

One path for every runtime (:mod:`suite.runtimes`): the runtime gives the config as it runs
there, checks what it needs, runs the ranks and returns their measurements; the result is built
from them, annotated by the runtime, and followed by the runtime's scaling comparison when it
has one. The result JSON is always written before anything is sent to MLflow, so a tracking
failure never loses a measurement.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path

from suite.config import RunConfig
from suite.errors import TrackingError
from suite.launchers import LaunchPlan
from suite.results import Result, seal, write_result
from suite.run.assemble import build_result
from suite.run.header import planned_header
from suite.run.options import ProgressCallback, ResultElsewhere, RunError, RunOptions, RunOutcome, new_stamped_dir
from suite.run.outbox import OutboxEntry, enqueue
from suite.run.preflight import preflight
from suite.run.recover import claim
from suite.run.scaling import scaling
from suite.run.timeline import timeline_png
from suite.runtimes.base import Comparison, Ran, RunContext


def execute(config: RunConfig, opts: RunOptions, on_progress: ProgressCallback | None = None) -> RunOutcome:
    """Preflight, run through ``opts.runtime``, write the result JSON, plot, then log to MLflow.

    While it runs, the supervisor holds its run directory (:func:`suite.run.recover.claim`), so a
    later invocation can tell a run whose supervisor died and keep what it measured.

    Raises:
        PreflightError, suite.cost.PriceTableError, suite.launchers.LaunchError: before the run starts.
        suite.slurm.errors.SlurmError: sbatch refused the job (nothing ran).
        ResultElsewhere: this host's ranks of a multi-host run finished; another host wrote the result.
        RunError: the run failed or was interrupted; ``result_path`` names the
            incomplete result kept on disk when there was anything to keep.
    """
    started = opts.started_unix_s if opts.started_unix_s is not None else time.time()
    runtime = opts.runtime
    config = runtime.job_config(config)
    preflight(config, opts)
    run_id = uuid.uuid4().hex
    run_dir = new_stamped_dir(opts.output_dir / config.workload, token=run_id[:8])
    budget = config.windows.budget_s
    with claim(run_dir, run_id, config, opts.system) as held:
        ctx = RunContext(
            run_uid=run_id,
            on_progress=on_progress,
            on_plan=held.plan,
            announce=_announcer(config, on_progress),
            on_submit=lambda job_id: held.write(slurm_job_id=job_id),
            notify=opts.notify,
            deadline_unix_s=started + budget if budget is not None else None,
        )
        ran = runtime.run(config, run_dir, ctx)
        if ran.measurement is None:
            held.release()
            raise ResultElsewhere(
                f"this host's ranks finished; global rank 0 ran on another host of the "
                f"{config.launch.host_count()}, which wrote the result and logged the run "
                f"(this host's rank logs: {run_dir})"
            )
        result = build_result(config, opts, ran.measurement, ran.plan, run_id)
        result = runtime.annotate(result, ran, run_dir, opts.system)
        compared = runtime.comparison(config, ran) if result.status == "complete" else None
        if isinstance(compared, str):
            info = {**result.workload_info, "scaling_note": compared}
            result = seal({**result.model_dump(), "workload_info": info})
        elif compared is not None:
            result = _with_comparison(result, compared, opts, run_dir, on_progress)
        return _finish(result, ran.code, run_dir, opts)


def _announcer(config: RunConfig, on_progress: ProgressCallback | None) -> Callable[[LaunchPlan], None] | None:
    """The ``RunContext.announce`` that turns the local plan into the run header event (None without progress)."""
    if on_progress is None:
        return None
    return lambda plan: on_progress(planned_header(config, plan.environ()))


def _finish(result: Result, code: int, run_dir: Path, opts: RunOptions) -> RunOutcome:
    """Write the result (complete or not), plot it, log it to MLflow; raise RunError for an incomplete one."""
    config = result.config
    if result.status != "complete":
        path = write_result(result, run_dir / "result-incomplete.json")
        if opts.tracking_uri:
            # the incomplete result is on disk; the RunError below is what matters
            _track(result, path, [], opts)
        interrupted = bool(result.error and result.error.startswith("interrupted"))
        job = result.runtime.slurm
        log = run_dir / (f"slurm-{job.job_id}.out" if job is not None else "rank0.log")
        raise RunError(
            f"run {'interrupted' if interrupted else 'failed'}: {result.error}. "
            f"The {len(result.steps)} steps measured are kept, marked incomplete, in {path} "
            f"({'job' if job else 'rank'} log: {log})",
            result_path=path,
            exit_code=130 if interrupted else (code if code and code > 0 else 1),
        )
    result_path = write_result(result, run_dir / "result.json")
    for tmp in ("measurement.json", "progress.jsonl", "events.jsonl"):
        (run_dir / tmp).unlink(missing_ok=True)
    timeline = timeline_png(
        result.steps,
        result.windows,
        result.utilization,
        run_dir / "timeline.png",
        f"{config.workload} ({config.profile}): {result.summary.throughput:.2f} samples/s" if result.summary else "",
    )
    outcome = RunOutcome(result, result_path, timeline)
    if opts.tracking_uri:
        outcome.mlflow_run_id, outcome.tracking_error = _track(result, result_path, [timeline], opts)
    return outcome


def _with_comparison(
    result: Result, compared: Comparison, opts: RunOptions, run_dir: Path, on_progress: ProgressCallback | None
) -> Result:
    """Run ``compared`` (one process on the ranks' CPUs, or the same job on one node) in its folder of
    ``run_dir``; reseal ``result`` with the scaling efficiency, whose interval propagates both runs'
    95% intervals (:func:`suite.run.scaling.scaling`).

    If the comparison fails or is interrupted, the run as a whole did not finish: the returned
    result is ``incomplete`` (no summary, so no score), keeps the ranks' measured steps, and its
    error says why (``interrupted ...`` for a signal, so the caller exits 130 and MLflow marks the
    run KILLED; otherwise FAILED).
    """
    assert result.summary is not None
    folder = run_dir / compared.folder
    folder.mkdir()
    if compared.announce is not None and opts.notify is not None:
        opts.notify(compared.announce)
    config, runtime = compared.config, compared.runtime
    other_id = uuid.uuid4().hex
    budget = config.windows.budget_s  # the comparison's own budget, from its own start
    ctx = RunContext(
        run_uid=other_id,
        on_progress=on_progress,
        announce=_announcer(config, on_progress),
        notify=opts.notify,
        deadline_unix_s=time.time() + budget if budget is not None else None,
    )
    ran: Ran = runtime.run(config, folder, ctx)
    assert ran.measurement is not None  # the comparison runs on one host
    other = runtime.annotate(build_result(config, opts, ran.measurement, ran.plan, other_id), ran, folder, opts.system)
    if other.summary is None:
        why = other.error or "it gave no valid measurement"
        error = why if why.startswith("interrupted") else f"{compared.what} failed: {why}"
        kept = write_result(other, folder / "result-incomplete.json")
        lost = {"status": "incomplete", "error": f"{error} (its records: {kept})", "summary": None}
        return seal({**result.model_dump(), **lost, "utilization_summary": None, "diagnosis": None, "cost": None})
    path = write_result(other, folder / "result.json")
    fields = scaling(
        result.summary, other.summary, result.utilization_summary, other.utilization_summary, compared.nodes
    )
    if compared.nodes > 1:
        fields["nodes"] = compared.nodes
    return seal(
        {**result.model_dump(), "scaling": {**fields, "single_result": str(path), "single_digest": other.digest}}
    )


def _track(result: Result, path: Path, artifacts: list[Path], opts: RunOptions) -> tuple[str | None, str | None]:
    """Log to MLflow; on failure queue the run in the outbox. Returns (run id, error)."""
    from suite.tracking import log_result

    assert opts.tracking_uri is not None
    try:
        return log_result(result, path, artifacts, opts.tracking_uri, opts.parent_run_id), None
    except TrackingError as exc:
        entry = OutboxEntry(str(path), [str(a) for a in artifacts], opts.tracking_uri, opts.parent_run_id, str(exc))
        queued = enqueue(opts.output_dir, result.run_id, entry)
        return None, f"{exc}\nThe run is queued in {queued}; push it later with `trainbench sync`."
