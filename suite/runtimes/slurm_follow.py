"""Following a run's Slurm job from the submitting host, and reading back what its ranks measured.

The job runs the same rank as a local run, started by the batch script
(:mod:`suite.runtimes.slurm_script`) on the job's nodes; the run directory is on a filesystem
shared by this host and the nodes, so the job file, every rank's measurement and progress log,
and the supervisor's heartbeat are all in one place:

- the job is submitted and followed (:func:`launch_job`): its state changes are
  announced, rank 0's progress log feeds the live progress, a rank that finishes no step
  within ``startup_timeout_s`` / ``stall_timeout_s`` of the job starting gets the job
  cancelled as hung, and Ctrl-C cancels it (``scancel``: the ranks get SIGTERM and write
  what they measured);
- at its end every rank's records are read from the run directory: the gathered
  measurement of a job that completed, else each rank's own files, marked incomplete
  with the job's end in words (e.g. NODE_FAIL).
"""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from suite.config import RunConfig
from suite.launchers import LaunchPlan
from suite.runtimes.base import ProgressCallback, RunContext
from suite.runtimes.leftovers import lost_supervisor_note, partial_ranks, tail_progress
from suite.runtimes.slurm_script import RankCommand
from suite.runtimes.supervise import INTERRUPTED
from suite.slurm.client import JobInfo, SlurmClient
from suite.slurm.errors import QueueTimeoutError, SlurmError
from suite.slurm.follow import SCRIPT_NAME, cancel, describe_end, follow, submit
from suite.slurm.options import SlurmOptions
from workloads.heartbeat import HEARTBEAT_NAME, Heartbeat
from workloads.measurement import RankMeasurement

Notify = Callable[[str], None]


class _Hung(Exception):
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds


@dataclass
class JobRun:
    """What a Slurm job left: the measurement, the plan it recorded, its exit status and the job itself.

    Attributes:
        measurement: every rank's records (gathered, or rebuilt from each rank's files).
        plan: the runtime recorded in the result (``sbatch <script>``; kind ``slurm``).
        code: 0 for a completed job, 130 when interrupted, else 1.
        info: the job's final state (None if it vanished from the controller).
        nodes: the job's nodes, expanded.
        cluster: the cluster's name, when known.
        options: the options the job was submitted with.
    """

    measurement: RankMeasurement
    plan: LaunchPlan
    code: int
    info: JobInfo | None
    nodes: list[str]
    cluster: str | None
    options: SlurmOptions


def _progress_bytes(run_dir: Path) -> int:
    return sum(p.stat().st_size for p in run_dir.glob("progress*.jsonl"))


def launch_job(
    client: SlurmClient,
    config: RunConfig,
    run_dir: Path,
    script: str,
    options: SlurmOptions,
    rank: RankCommand,
    ctx: RunContext,
) -> JobRun:
    """Submit the run as a job, follow it to its end, and read back what its ranks measured.

    ``config`` is the job's (``SlurmRuntime.job_config``), ``script`` its batch script, submitted
    with ``options`` and starting ``rank`` on every node. While the job runs the supervisor beats
    its heartbeat in the run directory (the ranks stop within seconds when it stops).

    ``ctx.on_plan`` receives the recorded plan before submission, ``ctx.on_submit`` the job id. A job
    that stays pending past ``--queue-timeout`` is cancelled; its measurement (no steps) says so.

    Raises:
        SlurmError: sbatch refused the job (nothing ran; the run directory is removed), or
            the controller stopped answering.
    """
    say = ctx.say
    plan = LaunchPlan(
        command=["sbatch", str(run_dir / SCRIPT_NAME)],
        env_set=rank.env,
        launcher=config.launch.launcher,
        runtime="slurm",
        image=options.container_image,
        processes=options.ntasks,
    )
    heartbeat = Heartbeat(run_dir / HEARTBEAT_NAME).start()
    try:
        # every rank's harness holds the run's identity
        job = config.job().model_copy(update={"lifeline": heartbeat.job_entry(), "run_uid": ctx.run_uid})
        job.write(run_dir / "job.json")
        if ctx.on_plan is not None:
            ctx.on_plan(plan)
        try:
            job_id = submit(client, script, run_dir)
        except SlurmError:
            heartbeat.stop()
            shutil.rmtree(run_dir, ignore_errors=True)
            raise
        if ctx.on_submit is not None:
            ctx.on_submit(job_id)
        say(f"job {job_id} submitted: {options.nodes} node(s) x {options.ntasks_per_node} rank(s) ({client.where()})")
        info, why = _follow(client, job_id, run_dir, config, options, ctx.on_progress, say)
    finally:
        heartbeat.stop()
    measurement, code = _gather(run_dir, info, why, options.ntasks)
    note = lost_supervisor_note(measurement.error, heartbeat)
    if note is not None:
        measurement = measurement.model_copy(update={"error": f"{measurement.error}; {note}"})
    nodes: list[str] = []
    if info is not None and info.nodelist:
        try:
            nodes = client.hostnames(info.nodelist)
        except SlurmError:  # the measurement is in hand: a controller gone quiet must not lose it
            nodes = []
    return JobRun(measurement, plan, code, info, nodes, client.cluster_name(), options)


def _follow(
    client: SlurmClient,
    job_id: str,
    run_dir: Path,
    config: RunConfig,
    options: SlurmOptions,
    on_progress: ProgressCallback | None,
    say: Notify,
) -> tuple[JobInfo | None, str | None]:
    """Follow the job to its end; return its final state and why the supervisor ended it (None: it ended itself)."""
    offset, seen = 0, -1
    last_step = started = 0.0
    launch = config.launch

    def on_change(info: JobInfo) -> None:
        where = f" on {info.nodelist}" if info.nodelist and not info.pending else ""
        say(f"job {info.job_id} {info.state}{where}" + (f" ({info.reason})" if info.reason else ""))

    def on_poll(info: JobInfo) -> None:
        nonlocal offset, seen, last_step, started
        offset = tail_progress(run_dir / "progress.jsonl", offset, on_progress)
        if info.state != "RUNNING":
            return
        now = time.monotonic()
        started = started or now
        size = _progress_bytes(run_dir)
        if size != seen:
            seen, last_step = size, now
        limit = launch.stall_timeout_s if size else launch.startup_timeout_s
        if now - (last_step if size else started) > limit:
            raise _Hung(now - (last_step if size else started))

    why: str | None = None
    try:
        info: JobInfo | None = follow(
            client, job_id, queue_timeout_s=options.queue_timeout_s, poll_s=options.poll_s,
            on_change=on_change, on_poll=on_poll,
        )  # fmt: skip
    except KeyboardInterrupt:
        say(f"interrupted: cancelling job {job_id} (its ranks write what they measured)")
        why, info = INTERRUPTED, cancel(client, job_id)
    except QueueTimeoutError as exc:
        why, info = str(exc), client.job(job_id)
        say(why)
    except SlurmError as exc:  # the controller stopped answering: keep what the ranks wrote, stop the job if possible
        why, info = f"lost contact with the Slurm controller while following job {job_id}: {exc}", None
        say(why)
        with contextlib.suppress(SlurmError):
            info = cancel(client, job_id, timeout_s=10)
    except _Hung as hung:
        why = (
            f"the ranks finished no step for {hung.seconds:.0f} s (startup_timeout_s / stall_timeout_s); "
            f"job {job_id} was cancelled as hung"
        )
        say(why)
        info = cancel(client, job_id)
    tail_progress(run_dir / "progress.jsonl", offset, on_progress)
    return info, why


def _gather(run_dir: Path, info: JobInfo | None, why: str | None, world: int) -> tuple[RankMeasurement, int]:
    """Every rank's records and the exit status: 0 completed, 130 interrupted, 1 otherwise."""
    log = run_dir / f"slurm-{info.job_id}.out" if info is not None else None
    ended = describe_end(info, log) if info is not None else "the job vanished from the controller"
    m = RankMeasurement.read(run_dir / "measurement.json")
    completed = why is None and info is not None and info.state == "COMPLETED"
    if completed and m is not None and m.complete and (world == 1 or m.ranks):
        return m, 0
    if ended is None:  # COMPLETED, yet a rank's records are missing or incomplete
        ended = f"the job completed, but its ranks' records are incomplete; see {log}"
    reason = ended if why in (None, INTERRUPTED) else why
    ranks, error = partial_ranks(run_dir, reason)
    first = ranks[0] if ranks else RankMeasurement(world_size=world)
    if why == INTERRUPTED:
        error = f"{INTERRUPTED}: {error}"
    update: dict[str, Any] = {"complete": False, "error": error}
    if world > 1:
        update["ranks"] = ranks
    return first.model_copy(update=update), 130 if why == INTERRUPTED else 1
