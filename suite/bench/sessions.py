"""Start and talk to the block workers of the docker/local benchmark (:mod:`suite.bench.worker`).

A worker is started from the run's own launch plan (:func:`suite.launchers.plan_launch`): the
rank's command with ``-m workloads.rank ...`` replaced by ``-m suite.bench.worker ...``, the
plan's environment (allocator preload, OpenMP variables), and for the container side the run's
own ``docker run`` wrapper (:meth:`suite.runtimes.docker.DockerRuntime.wrapper`) with ``--interactive``
added, so the worker reads its commands from standard input. Every wait is bounded: a worker
that exits, answers an error or stays silent past the timeout raises :class:`WorkerError` with
the tail of its log.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import select
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from suite.errors import RunFailed
from suite.launchers import LaunchPlan, plan_launch

LOG_TAIL_CHARS = 2000
"""How much of a failed worker's log goes into the error."""


class WorkerError(RunFailed):
    """A block worker exited, answered an error, or did not answer in time (exit status 1)."""


@dataclass
class Worker:
    """One running worker: its process, its run directory and what it has printed so far."""

    name: str
    proc: subprocess.Popen[bytes]
    run_dir: Path
    log: IO[bytes]
    buffer: bytes = field(default=b"")

    def _fail(self, why: str) -> WorkerError:
        self.log.flush()
        tail = (self.run_dir / "worker.log").read_text(errors="replace")[-LOG_TAIL_CHARS:]
        return WorkerError(f"the {self.name} worker {why}; its log ({self.run_dir / 'worker.log'}) ends:\n{tail}")

    def send(self, line: str) -> None:
        """Write one command line.

        Raises:
            WorkerError: the worker has exited.
        """
        if self.proc.stdin is None:
            raise self._fail("has no standard input")
        try:
            self.proc.stdin.write(line.encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            raise self._fail(f"exited (code {self.proc.poll()})") from None

    def receive(self, timeout_s: float) -> dict[str, Any]:
        """The next JSON line the worker prints, within ``timeout_s`` seconds.

        Raises:
            WorkerError: the worker exited, answered ``{"error": ...}``, printed something
                that is not a JSON object, or was silent for ``timeout_s``.
        """
        if self.proc.stdout is None:
            raise self._fail("has no standard output")
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._fail(f"did not answer within {timeout_s:.0f} s")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    self.proc.wait()
                    raise self._fail(f"exited (code {self.proc.returncode}) before answering")
                self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        try:
            doc = json.loads(line)
        except ValueError:
            doc = None
        if not isinstance(doc, dict):
            raise self._fail(f"printed {line[:200]!r}, not a JSON object")
        if "error" in doc:
            raise self._fail(f"failed: {doc['error']}")
        return doc

    def stop(self, timeout_s: float = 60.0) -> None:
        """Ask the worker to stop and wait for it; kill it if it does not exit in ``timeout_s``."""
        if self.proc.poll() is None:
            with contextlib.suppress(WorkerError):
                self.send("stop")
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()
        self.log.close()


def worker_plan(plan: LaunchPlan, job: Path, system: Path, progress: Path) -> LaunchPlan:
    """``plan`` with its rank module replaced by the block worker (launcher prefixes kept).

    Raises:
        ValueError: the plan does not start ``-m workloads.rank`` (a launcher this benchmark
            cannot drive, e.g. torchrun).
    """
    cmd = plan.command
    at = next((i for i in range(1, len(cmd)) if cmd[i - 1] == "-m" and cmd[i] == "workloads.rank"), None)
    if at is None:
        raise ValueError(f"the launch plan does not run workloads.rank directly: {cmd}")
    worker = ["suite.bench.worker", "--job", str(job), "--system", str(system), "--progress", str(progress)]
    return dataclasses.replace(plan, command=[*cmd[:at], *worker])


def start_worker(
    name: str, config: Any, run_dir: Path, wrap: Callable[[LaunchPlan, Path], LaunchPlan] | None
) -> Worker:
    """Write the job into ``run_dir`` and start a worker for it (in a container when ``wrap``)."""
    run_dir.mkdir(parents=True, exist_ok=False)
    job, progress = run_dir / "job.json", run_dir / "progress.jsonl"
    config.job().write(job)
    plan = worker_plan(
        plan_launch(config.launch, job, run_dir / "measurement.json", progress), job, run_dir / "system.json", progress
    )
    if wrap is not None:
        plan = wrap(plan, run_dir)
        at = plan.command.index("run") + 1
        plan = dataclasses.replace(plan, command=[*plan.command[:at], "--interactive", *plan.command[at:]])
    log = (run_dir / "worker.log").open("wb")
    proc = subprocess.Popen(plan.command, env=plan.environ(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log)
    return Worker(name, proc, run_dir, log)
