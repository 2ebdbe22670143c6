"""Supervising the ranks of a run: start their process group, follow their progress, stop them,
and rebuild what a dead rank left behind.

The launcher runs in its own process group, so stopping it stops every rank and
DataLoader worker and leaves no orphans. Each rank writes a
:class:`workloads.measurement.RankMeasurement` and appends its step records to a progress
log (a write-ahead log), so a rank that dies still leaves its steps.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from harness.procstat import ROOT_PID_ENV
from suite.config import RunConfig
from suite.launchers import LaunchPlan, plan_launch
from suite.runtimes.base import ProgressCallback, Ran, RunContext
from suite.runtimes.leftovers import lost_supervisor_note, partial_ranks, steps_from_log, tail_progress
from workloads.events import events_path
from workloads.heartbeat import HEARTBEAT_NAME, Heartbeat
from workloads.measurement import RankMeasurement

STOP_GRACE_S = 30.0
"""Seconds an interrupted rank gets to write its partial measurement before it is killed."""
INTERRUPTED = "interrupted (SIGINT)"
"""The error of a run stopped by Ctrl-C or SIGTERM to trainbench (``interrupted`` starts it: exit 130)."""


def death_reason(code: int | None, hung_s: float | None) -> str:
    """Why a rank ended without finishing, in words.

    Args:
        code: the exit status of the process the runner started (the rank, its launcher,
            or ``docker run``). Negative: killed by that signal (Popen's convention).
            128 + N: the shell's and Docker's convention for "the process inside was
            killed by signal N" (e.g. 137 = SIGKILL, which is what an out-of-memory kill
            inside a container with ``--memory`` reports).
        hung_s: seconds without a finished step when the runner killed a hung rank, or None.
    """
    if hung_s is not None:
        return (
            f"the rank finished no step for {hung_s:.0f} s (startup_timeout_s / stall_timeout_s) and was killed as hung"
        )
    hint = " (the kernel's out-of-memory killer sends SIGKILL: lower batch_size or set memory_limit_mb)"
    if code is not None and code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else f"signal {-code}"
        return f"the rank was killed by {name}" + (hint if -code == signal.SIGKILL else "")
    if code is not None and code > 128 and (code - 128) in signal.valid_signals():
        sig = signal.Signals(code - 128)
        return (
            f"the rank exited with code {code} (128 + {sig.name}: it was killed by {sig.name} inside its container "
            "or launcher)" + (hint if sig == signal.SIGKILL else "")
        )
    return f"the rank exited with code {code} before finishing"


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    """Send ``sig`` to the rank's whole process group (launcher, ranks, DataLoader workers)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


class _ProcessTree:
    """Every process the run started, remembered while they are alive.

    Launchers such as torchrun start ranks in sessions of their own, where a signal
    to the launcher's process group does not reach them, and a launcher that is
    killed leaves its ranks behind; remembering the tree lets the runner kill them.
    """

    def __init__(self, root: int) -> None:
        self.root = root
        self.known: dict[int, float] = {}

    def refresh(self) -> None:
        with contextlib.suppress(psutil.Error):
            for p in psutil.Process(self.root).children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    self.known.setdefault(p.pid, p.create_time())

    def kill_all(self) -> None:
        for pid, created in self.known.items():
            with contextlib.suppress(psutil.Error):
                p = psutil.Process(pid)
                if p.create_time() == created:
                    p.kill()


def _stop(proc: subprocess.Popen[bytes], sig: int) -> None:
    _signal_group(proc, sig)
    try:
        proc.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        _signal_group(proc, signal.SIGKILL)
        proc.wait()


def launch_rank(
    config: RunConfig,
    run_dir: Path,
    ctx: RunContext,
    wrap: Callable[[LaunchPlan, Path], LaunchPlan] | None = None,
    gpus: int = 0,
) -> Ran:
    """Start the rank(s) on this host (or in a container, through ``wrap``), follow their progress,
    and return what they measured.

    While the ranks run, the supervisor beats a heartbeat in the run directory, which
    the job file names (:mod:`workloads.lifeline`): ranks whose supervisor dies, however
    it dies, stop within seconds and keep what they measured. ``ctx.announce`` receives the
    local plan before it is wrapped, ``ctx.on_plan`` the plan that runs, just before the ranks start.

    On Ctrl-C (or SIGTERM to trainbench) the group is told to stop (SIGINT), given
    STOP_GRACE_S to write what it measured, then killed. If no rank finishes a first
    step within ``launch.startup_timeout_s``, or a next step within
    ``launch.stall_timeout_s``, the run is killed as hung. A run that dies without its
    final measurement gets one rebuilt from each local rank's files and progress log,
    marked incomplete with the reason. A distributed run's measurement holds every
    rank's records under ``ranks`` (gathered on global rank 0).

    Args:
        wrap: the local plan and the run directory -> the plan to execute instead (the same
            command inside ``docker run``); the run directory must be visible to the rank at the
            same path.
        gpus: GPUs visible to a workload that trains on them (0 for a CPU workload).

    ``ctx.on_progress`` receives, besides each step record, what rank 0 reports in
    ``events.jsonl`` (its precision decision, environment and time projection:
    :mod:`workloads.events`), each before the step it precedes.

    The ranks get ``TRAINBENCH_ROOT_PID`` = this process, so their samplers count the
    supervisor, the launcher and every sibling rank as the run, and only other processes
    as interference.
    """
    job = run_dir / "job.json"
    out = run_dir / "measurement.json"
    progress = run_dir / "progress.jsonl"
    log = run_dir / "rank0.log"
    plan = plan_launch(config.launch, job, out, progress, gpus=gpus)
    deadline = ctx.deadline_unix_s if config.windows.budget_s is not None else None
    heartbeat = Heartbeat(run_dir / HEARTBEAT_NAME).start()
    try:
        config.job().model_copy(
            update={
                "placement": plan.placement,
                "run_uid": ctx.run_uid,
                "deadline_unix_s": deadline,
                "lifeline": heartbeat.job_entry(),
            }
        ).write(job)
        if ctx.announce is not None:
            ctx.announce(plan)
        if wrap is not None:
            plan = wrap(plan, run_dir)
        if ctx.on_plan is not None:
            ctx.on_plan(plan)
        code, interrupted, hung_s = _supervise(plan, config, run_dir, log, progress, ctx.on_progress)
    finally:
        heartbeat.stop()  # after the ranks have ended: a rank still running would now stop
    reason = INTERRUPTED if interrupted else f"{death_reason(code, hung_s)}; see {log}"
    measurement = RankMeasurement.read(out)
    hosts = config.launch.host_count()
    if hosts > 1 and code == 0 and not interrupted and not out.exists():
        return Ran(None, plan, code)
    m = measurement or RankMeasurement()
    distributed = plan.processes > 1 or hosts > 1
    if distributed and not (m.complete and m.ranks):
        ranks, error = partial_ranks(run_dir, reason)
        first = ranks[0] if ranks else RankMeasurement()
        m = first.model_copy(update={"ranks": ranks, "complete": False, "error": error})
    elif not m.finished:
        m.complete, m.error, m.steps, m.windows = False, reason, steps_from_log(progress), []
    elif interrupted and m.error is None:
        m.complete, m.error = False, INTERRUPTED
    note = lost_supervisor_note(m.error, heartbeat)
    if note is not None:
        m.error = f"{m.error}; {note}"
    return Ran(m, plan, code)


def _supervise(
    plan: LaunchPlan,
    config: RunConfig,
    run_dir: Path,
    log: Path,
    progress: Path,
    on_progress: ProgressCallback | None,
) -> tuple[int, bool, float | None]:
    """Run the plan's process group to its end; return (exit status, interrupted, seconds hung or None)."""
    events = events_path(progress)
    offset = ev_offset = 0
    seen = 0
    interrupted = False
    hung_s: float | None = None
    startup, stall = config.launch.startup_timeout_s, config.launch.stall_timeout_s
    with log.open("w") as logf:
        proc = subprocess.Popen(
            plan.command,
            env={**plan.environ(), ROOT_PID_ENV: str(os.getpid())},
            stdout=logf,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        last_step = time.monotonic()
        tree = _ProcessTree(proc.pid)
        try:
            while proc.poll() is None:
                tree.refresh()
                ev_offset = tail_progress(events, ev_offset, on_progress)  # events first: they precede the steps
                offset = tail_progress(progress, offset, on_progress)
                size = sum(p.stat().st_size for p in run_dir.glob("progress*.jsonl"))
                now = time.monotonic()
                if size != seen:
                    seen, last_step = size, now
                elif now - last_step > (stall if seen else startup):
                    hung_s = now - last_step
                    tree.kill_all()
                    _signal_group(proc, signal.SIGKILL)
                    proc.wait()
                    break
                time.sleep(0.2)
        except KeyboardInterrupt:
            interrupted = True
            _stop(proc, signal.SIGINT)
        finally:
            if proc.poll() is None:
                _stop(proc, signal.SIGTERM)
            _signal_group(proc, signal.SIGKILL)  # nothing of the run outlives it
            tree.kill_all()
    tail_progress(events, ev_offset, on_progress)
    tail_progress(progress, offset, on_progress)
    return proc.returncode, interrupted, hung_s
