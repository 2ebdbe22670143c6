"""Submit a batch script and follow the job to its end: states as they change, a queue timeout, cancellation.

The supervisor (``trainbench run --launcher slurm``) writes the script into the run
directory, calls :func:`submit`, then :func:`follow` while it tails the ranks' progress
logs in the shared run directory. On Ctrl-C it calls :func:`cancel`, which waits until
the job has ended (the ranks get SIGTERM and write what they measured).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from suite.slurm.client import JobInfo, SlurmClient
from suite.slurm.errors import QueueTimeoutError, SlurmError

SCRIPT_NAME = "job.sbatch"
"""The batch script's name in the run directory."""
VANISHED_POLLS = 3
"""Consecutive looks at which neither scontrol nor sacct knows the job before it counts as lost."""
UNANSWERED_POLLS = 10
"""Consecutive looks at which the controller does not answer (e.g. while it restarts) before following stops."""

Clock = Callable[[], float]


def submit(client: SlurmClient, script: str, run_dir: Path) -> str:
    """Write ``script`` to ``<run_dir>/job.sbatch`` and submit it; return the job id.

    Raises:
        SlurmError: sbatch refused the job (e.g. more nodes than the partition has); its reason is in the message.
        SlurmUnavailableError: no Slurm client, or the controller does not answer.
    """
    path = run_dir / SCRIPT_NAME
    path.write_text(script)
    return client.submit(path)


def follow(
    client: SlurmClient,
    job_id: str,
    *,
    queue_timeout_s: float | None = None,
    poll_s: float = 2.0,
    on_change: Callable[[JobInfo], None] | None = None,
    on_poll: Callable[[JobInfo], None] | None = None,
    clock: Clock = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> JobInfo:
    """Poll the job every ``poll_s`` seconds until it reaches a terminal state; return that state.

    Args:
        client: the cluster's client.
        job_id: the job.
        queue_timeout_s: seconds (from this call) the job may stay pending; then it is cancelled.
        poll_s: seconds between two looks.
        on_change: called with the job's state each time the state (or the pending reason) changes.
        on_poll: called at every look (e.g. to tail the progress logs).
        clock, sleep: monotonic clock and sleep, seconds.

    Raises:
        QueueTimeoutError: still pending after ``queue_timeout_s``; the job was cancelled and the
            message gives Slurm's pending reason.
        SlurmError: the job vanished (neither scontrol nor sacct knows it), or the controller did
            not answer :data:`UNANSWERED_POLLS` looks in a row (the last error is passed on).
        KeyboardInterrupt: passed on; the caller cancels the job (:func:`cancel`).
    """
    start = clock()
    last: tuple[str, str | None] | None = None
    missing = unanswered = 0
    while True:
        try:
            info = client.job(job_id)
            unanswered = 0
        except SlurmError:
            unanswered += 1
            if unanswered >= UNANSWERED_POLLS:
                raise
            sleep(poll_s)
            continue
        if info is None:
            missing += 1
            if missing >= VANISHED_POLLS:
                raise SlurmError(
                    f"job {job_id} is unknown to the controller and to accounting (sacct): it ended more than "
                    "MinJobAge ago on a cluster without accounting storage, or it was removed"
                )
        else:
            missing = 0
            if (info.state, info.reason) != last:
                last = (info.state, info.reason)
                if on_change is not None:
                    on_change(info)
            if on_poll is not None:
                on_poll(info)
            if info.terminal:
                return info
            waited = clock() - start
            if info.pending and queue_timeout_s is not None and waited > queue_timeout_s:
                client.cancel(job_id)
                raise QueueTimeoutError(
                    f"job {job_id} was still pending after {waited:.0f} s (queue timeout {queue_timeout_s:.0f} s; "
                    f"Slurm's reason: {info.reason or 'none given'}), so it was cancelled. Ask for fewer or other "
                    "resources (nodes, partition, time), or raise the queue timeout",
                    job_id,
                    info.reason or "",
                )
        sleep(poll_s)


def cancel(
    client: SlurmClient,
    job_id: str,
    timeout_s: float = 60.0,
    poll_s: float = 1.0,
    clock: Clock = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> JobInfo | None:
    """``scancel`` the job and wait up to ``timeout_s`` for it to end; return its last known state.

    The ranks get SIGTERM (they write their partial measurement), then SIGKILL after the
    cluster's KillWait. A job that already ended is left as it is.

    Raises:
        SlurmUnavailableError: the controller does not answer.
    """
    info = client.job(job_id)
    if info is not None and info.terminal:
        return info
    client.cancel(job_id)
    deadline = clock() + timeout_s
    while clock() < deadline:
        info = client.job(job_id)
        if info is None or info.terminal:
            return info
        sleep(poll_s)
    return info


def describe_end(info: JobInfo, log: Path | None) -> str | None:
    """Why a job that ended did not complete, in words with what to do (None for COMPLETED).

    Args:
        info: the job's terminal state.
        log: the job's log in the run directory (``slurm-<id>.out``), or None.
    """
    if info.state == "COMPLETED":
        return None
    where = f"job {info.job_id} on {info.nodelist or 'no node'}"
    see = f"; see {log}" if log is not None and log.exists() else ""
    if info.state == "FAILED" and (log is None or not log.exists()):
        return (
            f"{where} failed before writing its log ({info.reason or 'no reason given'}, exit {info.exit_code}): "
            "the nodes do not see the run directory; the output directory must be on a filesystem shared by this "
            "host and every node (with the demo cluster: under one of its shared directories, by default ./results)"
        )
    why = {
        "NODE_FAIL": f"a node of the job failed ({info.reason or 'NodeDown'}); the steps measured before are kept",
        "TIMEOUT": "it reached its time limit (--time); ask for more time or fewer steps",
        "OUT_OF_MEMORY": "a rank ran out of memory; lower batch_size or ask for more memory",
        "CANCELLED": f"it was cancelled ({info.reason or 'scancel'})",
        "PREEMPTED": "it was preempted by a job of higher priority",
        "BOOT_FAIL": "its nodes failed to boot",
        "DEADLINE": "it reached its deadline",
    }.get(info.state, f"it ended {info.state} (exit {info.exit_code}, {info.reason or 'no reason given'})")
    return f"{where}: {why}{see}"
