"""One trainbench run end to end: preflight, supervise the ranks, assemble the result, write it, track it.

The result JSON is always written before anything is sent to MLflow, so a tracking
failure never loses a measurement.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from suite.config import RunConfig
from suite.errors import TrackingError
from suite.results import Result, seal, write_result
from suite.run.assemble import build_result
from suite.run.launch import LaunchPlan
from suite.run.options import ProgressCallback, ResultElsewhere, RunError, RunOptions, RunOutcome, new_stamped_dir
from suite.run.outbox import OutboxEntry, enqueue
from suite.run.preflight import preflight
from suite.run.recover import claim
from suite.run.scaling import scaling, single_process_config
from suite.run.supervise import compares_single, launch_rank
from suite.run.timeline import timeline_png


def execute(config: RunConfig, opts: RunOptions, on_progress: ProgressCallback | None = None) -> RunOutcome:
    """Preflight, run, write the result JSON, plot, then log to MLflow.

    With ``opts.slurm`` the run is a Slurm job (:mod:`suite.run.slurm`); its config is then
    the job's (:func:`suite.slurm.plan.job_config`). While it runs, the supervisor holds its
    run directory (:func:`suite.run.recover.claim`), so a later invocation can tell a run
    whose supervisor died and keep what it measured.

    Raises:
        PreflightError, suite.cost.PriceTableError, suite.run.launch.LaunchError: before the run starts.
        suite.slurm.errors.SlurmError: sbatch refused the job (nothing ran).
        ResultElsewhere: this host's ranks of a multi-host run finished; another host wrote the result.
        RunError: the run failed or was interrupted; ``result_path`` names the
            incomplete result kept on disk when there was anything to keep.
    """
    started = opts.started_unix_s if opts.started_unix_s is not None else time.time()
    if opts.slurm is not None:
        from suite.slurm.plan import job_config

        config, _ = job_config(config, opts.slurm)
    preflight(config, opts)
    run_id = uuid.uuid4().hex
    run_dir = new_stamped_dir(opts.output_dir / config.workload, token=run_id[:8])
    with claim(run_dir, run_id, config, opts.system) as held:
        if opts.slurm is not None:
            from suite.run.slurm_result import run_as_job

            result, code = run_as_job(
                config, opts, run_dir, run_id, on_progress, held.plan, lambda job_id: held.write(slurm_job_id=job_id)
            )
        else:
            budget = config.windows.budget_s
            deadline = started + budget if budget is not None else None
            measurement, plan, code = launch_rank(
                config, run_dir, on_progress, opts.wrap, held.plan, run_uid=run_id, deadline_unix_s=deadline
            )
            if measurement is None:
                held.release()
                raise ResultElsewhere(
                    f"this host's ranks finished; global rank 0 ran on another host of the "
                    f"{config.launch.host_count()}, which wrote the result and logged the run "
                    f"(this host's rank logs: {run_dir})"
                )
            result = build_result(config, opts, measurement, plan, run_id)
            if result.status == "complete" and compares_single(config, plan):
                result = _with_single_comparison(result, config, opts, plan, run_dir, on_progress)
        return _finish(result, code, run_dir, opts)


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


def _with_single_comparison(
    result: Result,
    config: RunConfig,
    opts: RunOptions,
    plan: LaunchPlan,
    run_dir: Path,
    on_progress: ProgressCallback | None,
) -> Result:
    """Measure one process on the ranks' CPUs at the same global batch; reseal ``result`` with the scaling.

    The comparison is skipped (scaling stays None, with a note in ``workload_info``)
    for multi-host runs, whose ranks' CPUs are not all on this host.

    If the comparison run fails or is interrupted, the run as a whole did not finish:
    the returned result is ``incomplete`` (no summary, so no score), keeps the ranks'
    measured steps, and its error says why (``interrupted ...`` for a signal, so the
    caller exits 130 and MLflow marks the run KILLED; otherwise FAILED).
    """
    if config.launch.host_count() > 1:
        info = {**result.workload_info, "scaling_note": "no single-process comparison across hosts"}
        return seal({**result.model_dump(), "workload_info": info})
    single_config = single_process_config(config, plan.placement)
    single_dir = run_dir / "single-process"
    single_dir.mkdir()
    single_id = uuid.uuid4().hex
    budget = single_config.windows.budget_s  # the comparison's own budget, from its own start
    deadline = time.time() + budget if budget is not None else None
    measurement, single_plan, _ = launch_rank(
        single_config, single_dir, on_progress, opts.wrap, run_uid=single_id, deadline_unix_s=deadline
    )
    assert measurement is not None  # one host
    single = build_result(single_config, opts, measurement, single_plan, single_id)
    if single.summary is None or result.summary is None:
        why = single.error or "it gave no valid measurement"
        error = why if why.startswith("interrupted") else f"the single-process comparison failed: {why}"
        single_kept = write_result(single, single_dir / "result-incomplete.json")
        return seal(
            {
                **result.model_dump(),
                "status": "incomplete",
                "error": f"{error} (its records: {single_kept})",
                "summary": None,
                "utilization_summary": None,
                "diagnosis": None,
                "cost": None,
            }
        )
    single_path = write_result(single, single_dir / "result.json")
    fields = scaling(result.summary, single.summary, result.utilization_summary, single.utilization_summary)
    return seal(
        {
            **result.model_dump(),
            "scaling": {**fields, "single_result": str(single_path), "single_digest": single.digest},
        }
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
