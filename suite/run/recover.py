"""Runs whose supervisor died: found by the next trainbench invocation and kept as incomplete results.

A supervisor (``trainbench run``) killed with SIGKILL (the OOM killer, a CI timeout)
writes no result. Its ranks stop within seconds (:mod:`workloads.lifeline`), and what
they measured stays in the run directory: each rank's measurement file and progress
log. This module makes such runs findable and turns them into results:

- while ``trainbench run`` supervises a run it holds an exclusive lock (``flock``) on
  ``supervisor.lock`` in the run directory (:func:`claim`), and keeps ``run.json``
  beside it: the run id, the resolved config, the system name and the launch plan,
  everything a result needs besides the ranks' records. The kernel releases the lock
  when the process dies, however it dies; a run that ends normally writes its result
  file and removes the lock file;
- ``trainbench run`` and ``trainbench sync`` first call :func:`recover` on their output
  directory. It looks at ``<output_dir>/<workload>/<run>/`` for a ``run.json`` with no
  result file and no live supervisor (its lock can be taken), whose ranks have stopped
  (the heartbeat unchanged for :data:`SETTLE_S`, longer than any rank's lifeline
  allows). Each such run becomes ``result-incomplete.json`` (status ``incomplete``,
  the error says the supervisor was lost) with every step its ranks recorded, and the
  command says so.

Why this trigger: the output directory is where the user looks for results and where
the next run writes, so the lost run is reported where it belongs, by the command the
user runs next, without a daemon; the lock makes it safe beside runs that are still
going (on this host, or on another one through the shared filesystem's locks).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from suite.config import RunConfig
from suite.files import FileProblem, read_json
from suite.launchers import LaunchPlan
from suite.results import write_result
from suite.run.assemble import build_result
from suite.run.options import RunOptions
from suite.runtimes.leftovers import partial_ranks
from workloads.heartbeat import HEARTBEAT_NAME, INTERVAL_S
from workloads.lifeline import GRACE_S, POLL_S, TIMEOUT_S
from workloads.measurement import RankMeasurement

RECORD_NAME = "run.json"
"""What the supervisor started, in the run directory (for recovery)."""
LOCK_NAME = "supervisor.lock"
"""The file the live supervisor holds an exclusive lock on."""
RESULT_NAMES = ("result.json", "result-incomplete.json")
SETTLE_S = INTERVAL_S + TIMEOUT_S + POLL_S + GRACE_S + 2.0
"""Seconds after the supervisor's last heartbeat by which every rank has stopped (its lifeline's worst case + 2 s)."""
MAX_RUN_DIRS = 10_000
"""Run directories looked at in one scan (the newest first)."""


@dataclass
class Claim:
    """A supervisor's hold on its run directory (see the module docstring).

    Attributes:
        run_dir: the run directory; record: the ``run.json`` document as written so far.
    """

    run_dir: Path
    record: dict[str, Any] = field(default_factory=dict)

    def write(self, **fields: Any) -> None:
        """Add ``fields`` to ``run.json`` (rewritten atomically)."""
        self.record.update(fields)
        tmp = self.run_dir / (RECORD_NAME + ".tmp")
        tmp.write_text(json.dumps(self.record, indent=1, default=str))
        os.replace(tmp, self.run_dir / RECORD_NAME)

    def release(self) -> None:
        """Forget the run (no result will be written here, e.g. global rank 0 ran on another host)."""
        with contextlib.suppress(OSError):
            (self.run_dir / RECORD_NAME).unlink()

    def plan(self, plan: LaunchPlan) -> None:
        """Record the launch plan (the result's ``runtime``)."""
        self.write(
            plan={
                "command": plan.command,
                "env_set": plan.env_set,
                "launcher": plan.launcher,
                "runtime": plan.runtime,
                "image": plan.image,
                "image_id": plan.image_id,
                "processes": plan.processes,
            }
        )


@contextlib.contextmanager
def claim(run_dir: Path, run_id: str, config: RunConfig, system: str | None) -> Iterator[Claim]:
    """Hold ``run_dir`` for a live supervisor: lock ``supervisor.lock`` and write ``run.json``.

    On leaving, the lock file is removed (the result file, written by then, says how the run ended).
    """
    lock_path = run_dir / LOCK_NAME
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        held = Claim(run_dir)
        held.write(
            run_id=run_id,
            config=config.model_dump(mode="json"),
            system=system,
            supervisor={"pid": os.getpid(), "host": os.uname().nodename},
            started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        yield held
    finally:
        with contextlib.suppress(OSError):
            lock_path.unlink()
        os.close(fd)


@dataclass(frozen=True)
class Recovered:
    """A run whose supervisor was lost, as :func:`recover` found it.

    Attributes:
        run_dir: its run directory; path: the result written (None when it was not written);
        steps: measured steps kept; note: what happened, in words.
    """

    run_dir: Path
    path: Path | None
    steps: int
    note: str


def _alive(run_dir: Path) -> bool:
    """A supervisor holds the run directory's lock."""
    try:
        fd = os.open(run_dir / LOCK_NAME, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing releases a lock taken here
    return False


def _candidates(output_dir: Path) -> list[Path]:
    """Run directories with a ``run.json`` and no result file (an unreadable directory is passed over)."""
    found: list[Path] = []
    try:
        workloads = sorted(output_dir.iterdir()) if output_dir.is_dir() else []
    except OSError:
        return found
    for workload in workloads:
        if not workload.is_dir() or workload.is_symlink():
            continue
        try:
            runs = sorted(workload.iterdir(), reverse=True)
        except OSError:
            continue
        for run_dir in runs:
            if len(found) >= MAX_RUN_DIRS:
                return found
            record = run_dir / RECORD_NAME
            if record.is_file() and not any((run_dir / n).exists() for n in RESULT_NAMES):
                found.append(run_dir)
    return found


def _measurement(run_dir: Path, world: int, reason: str) -> RankMeasurement:
    ranks, error = partial_ranks(run_dir, reason)
    first = ranks[0] if ranks else RankMeasurement(world_size=world)
    update: dict[str, Any] = {"complete": False, "error": error}
    if world > 1 or len(ranks) > 1:
        update["ranks"] = ranks
    return first.model_copy(update=update)


def recover_run(run_dir: Path) -> Recovered:
    """Turn one lost run's records into ``result-incomplete.json`` (see the module docstring).

    Raises:
        FileProblem: ``run.json`` cannot be read.
        pydantic.ValidationError: ``run.json`` does not hold a run's config.
    """
    record = read_json(run_dir / RECORD_NAME)
    config = RunConfig.model_validate(record["config"])
    raw = record.get("plan") or {}
    plan = LaunchPlan(
        command=list(raw.get("command") or []),
        env_set=dict(raw.get("env_set") or {}),
        launcher=str(raw.get("launcher") or config.launch.launcher),
        runtime=str(raw.get("runtime") or "local"),
        image=raw.get("image"),
        image_id=raw.get("image_id"),
        processes=int(raw.get("processes") or 1),
    )
    sup = record.get("supervisor") or {}
    job = f"; its Slurm job was {record['slurm_job_id']}" if record.get("slurm_job_id") else ""
    reason = (
        f"the supervisor was lost (trainbench run, pid {sup.get('pid')} on {sup.get('host')}, started "
        f"{record.get('started_at')}) before it wrote the result; recovered from the ranks' files{job}"
    )
    world = max(plan.processes, config.launch.host_count())
    m = _measurement(run_dir, world, reason)
    opts = RunOptions(output_dir=run_dir.parent.parent, tracking_uri=None, system=record.get("system"))
    result = build_result(config, opts, m, plan, str(record["run_id"]))
    path = write_result(result, run_dir / "result-incomplete.json")
    with contextlib.suppress(OSError):
        (run_dir / HEARTBEAT_NAME).unlink()
    return Recovered(run_dir, path, len(result.steps), reason)


def recover(output_dir: Path, now: float | None = None) -> list[Recovered]:
    """Find the runs under ``output_dir`` whose supervisor died and keep each as an incomplete result.

    A run whose ranks may still be stopping (heartbeat younger than :data:`SETTLE_S`) is left for
    the next invocation and listed with ``path`` None; so is one whose ``run.json`` cannot be read.
    """
    out: list[Recovered] = []
    clock = time.time() if now is None else now
    for run_dir in _candidates(output_dir):
        if _alive(run_dir):
            continue
        with contextlib.suppress(FileNotFoundError):
            age = clock - (run_dir / HEARTBEAT_NAME).stat().st_mtime
            if age < SETTLE_S:
                out.append(
                    Recovered(run_dir, None, 0, f"its supervisor was lost {age:.0f} s ago; ranks may still be stopping")
                )
                continue
        try:
            out.append(recover_run(run_dir))
        except (FileProblem, KeyError, TypeError, ValueError, OSError) as exc:
            out.append(Recovered(run_dir, None, 0, f"cannot be recovered: {exc}"))
    return out
