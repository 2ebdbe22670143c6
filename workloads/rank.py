"""One rank: build the workload, run the harness, write the raw measurement.

Invoked by the suite's launcher (inline, ``torch.backends.xeon.run_cpu``, torchrun,
horovodrun or inside a container) as::

    python -m workloads.rank --job job.json --out measurement.json [--progress progress.jsonl]

It reads a :class:`workloads.job.RankJob` (the workload, its params, the windows, and
optionally an address-space limit, RLIMIT_AS, so a run that needs too much memory fails with a
clear error instead of waking the kernel's OOM killer, and the deadline of the windows' ``budget_s``,
counted from the command's start: the harness's budget is what is left of it at the run's origin)
and writes a :class:`workloads.measurement.RankMeasurement`. A CPU workload's ``precision`` is decided on this
host before the workload is built (:mod:`workloads.cpu_precision`); the decision, the
environment and the time projection go to ``events.jsonl`` (:mod:`workloads.events`).

Nothing measured is lost:
- the progress file is a write-ahead log: one JSON step record per line, flushed
  as each step ends;
- the measurement file is written once the environment is captured (``complete``
  false, no ``error``: "still running") and again at the end, also when the run
  fails or is interrupted (then ``complete`` is false and ``error`` says why).
A launcher that finds a rank dead with a "still running" measurement rebuilds the
steps from the progress log.

Exit codes: 0 complete, 1 failed (workload or data error), 2 bad job file or a
workload's refusal before its first step, 130 interrupted (SIGINT or SIGTERM).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path
from types import FrameType
from typing import IO, Any

from pydantic import ValidationError

from harness.loop import Measurement, run_plan
from harness.precision import PrecisionChoice
from harness.sampler import UtilizationSampler
from harness.system import capture_system, parse_cpulist
from harness.windows import WindowError
from harness.workload import Workload
from workloads import registry
from workloads.checks import WorkloadRefused
from workloads.cpu_precision import resolve_params
from workloads.evaluation import EVALUATION_KEY, TRAJECTORY_KEY, run_evaluation, timed_pass
from workloads.events import EventLog, environment_fields, events_path, progress_writer, projection_fields
from workloads.job import PlacementSlot, RankJob
from workloads.lifeline import Lifeline
from workloads.measurement import RankMeasurement


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived; raised in the main thread so the loop stops at once."""


_stopping = False


def _on_signal(signum: int, frame: FrameType | None) -> None:
    """Raise :class:`Interrupted` on the first signal; ignore repeats (the launcher may
    forward the same Ctrl-C the terminal already sent) so the partial measurement is
    always written."""
    global _stopping
    if _stopping:
        return
    _stopping = True
    raise Interrupted(signal.Signals(signum).name)


def describe_error(exc: BaseException) -> str:
    """One line for the result: out-of-memory errors say so and what to change."""
    text = f"{type(exc).__name__}: {exc}"
    lowered = str(exc).lower()
    if isinstance(exc, MemoryError) or "can't allocate memory" in lowered or "out of memory" in lowered:
        return f"out of memory: {text}. Lower batch_size or raise memory_limit_mb / the machine's memory"
    return text


def _limit_memory(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _rank_path(path: Path, rank: int) -> Path:
    """Rank 0 keeps the launcher's path; rank r writes ``<stem>-rank<r><suffix>`` beside it."""
    return path if rank == 0 else path.with_name(f"{path.stem}-rank{rank}{path.suffix}")


def bind_and_reexec(placement: list[PlacementSlot], argv: list[str]) -> None:
    """Re-execute this rank under numactl, bound to its slot of ``placement``.

    The slot is ``placement[LOCAL_RANK]``: its CPUs and memory nodes (cpulists).
    OMP_NUM_THREADS is set to the slot's CPU count. Where memory binding is refused
    (a container without CAP_SYS_NICE), only the CPUs are bound and
    TRAINBENCH_BIND_NOTE says so; the binding actually obtained is read back by
    the rank either way. Returns only if already bound.

    Raises:
        RuntimeError: numactl is missing or there is no slot for this local rank.
    """
    if os.environ.get("TRAINBENCH_BOUND") == "1":
        return
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if local >= len(placement):
        raise RuntimeError(f"local rank {local} has no placement slot ({len(placement)} slots)")
    exe = shutil.which("numactl")
    if exe is None:
        raise RuntimeError("binding ranks to NUMA nodes needs numactl (apt-get install numactl)")
    slot = placement[local]
    env = {**os.environ, "TRAINBENCH_BOUND": "1", "OMP_NUM_THREADS": str(len(parse_cpulist(slot.cpus)))}
    cmd = [exe, f"--physcpubind={slot.cpus}"]
    membind = f"--membind={slot.mems}"
    if subprocess.run([exe, membind, "true"], capture_output=True).returncode == 0:
        cmd.append(membind)
    else:  # e.g. Docker's default seccomp profile refuses set_mempolicy: the cpuset's mems govern instead
        env["TRAINBENCH_BIND_NOTE"] = "membind refused (set_mempolicy not permitted); memory follows the cpuset's mems"
    os.execvpe(exe, [*cmd, sys.executable, "-m", "workloads.rank", *argv], env)


def launcher_rank() -> tuple[int, int]:
    """``(global rank, world size)`` from the launcher's environment.

    torchrun sets RANK/WORLD_SIZE, horovodrun HOROVOD_RANK/HOROVOD_SIZE (Open MPI's
    OMPI_COMM_WORLD_* are read too); none of them means a single process.
    """
    for rank_key, size_key in (
        ("RANK", "WORLD_SIZE"),
        ("HOROVOD_RANK", "HOROVOD_SIZE"),
        ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    ):
        if rank_key in os.environ:
            return int(os.environ[rank_key]), int(os.environ.get(size_key, "1"))
    return 0, 1


def gather_ranks(out: dict[str, Any], rank: int, world: int, workload: Workload) -> list[dict[str, Any]] | None:
    """All ranks' measurements (:meth:`RankMeasurement.to_json` form) on rank 0 (None elsewhere),
    through the workload's :meth:`harness.workload.Workload.all_gather` (Horovod's
    ``allgather_object``, or ``torch.distributed.all_gather_object`` over the job's CPU group).

    Raises:
        RuntimeError: a rank is missing (the collective fails or times out, or the workload gathers
            fewer objects than the world size).
    """
    gathered = list(workload.all_gather(out))
    if len(gathered) != world:
        raise RuntimeError(f"gathered {len(gathered)} ranks' records, expected {world}")
    return gathered if rank == 0 else None


def main(argv: list[str] | None = None) -> int:
    """Run one rank; see the module docstring for arguments and exit codes."""
    ap = argparse.ArgumentParser(prog="python -m workloads.rank")
    ap.add_argument("--job", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--progress", type=Path)
    raw_argv = list(sys.argv[1:] if argv is None else argv)
    args = ap.parse_args(raw_argv)

    rank, world = launcher_rank()
    args.out = _rank_path(args.out, rank)
    if args.progress is not None:
        args.progress = _rank_path(args.progress, rank)
    out = RankMeasurement(rank=rank, world_size=world)
    try:
        job = RankJob.read(args.job)
        if job.placement:
            bind_and_reexec(job.placement, raw_argv)
        entry = registry.get(job.workload)
        params = entry.params_model.model_validate(job.params)
        choice: PrecisionChoice | None = None
        if entry.cpu_precision:
            params, choice = resolve_params(params)  # on this host, before the workload is built
        plan = job.windows.plan()
        deadline, interval = job.deadline_unix_s, job.windows.sampler_interval_s
        if job.memory_limit_bytes is not None:
            _limit_memory(job.memory_limit_bytes)
        lifeline = Lifeline.from_entry(job.lifeline)  # stops this rank when its supervisor is gone
    except (OSError, ValueError, KeyError, TypeError, RuntimeError, ValidationError, WindowError) as exc:
        out.error = f"bad job file {args.job}: {exc}"
        out.write(args.out)
        print(out.error, file=sys.stderr)
        return 2

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    if lifeline is not None:
        lifeline.start()
    events = EventLog(events_path(args.progress) if args.progress is not None else None, rank)
    events.precision(choice)
    measurement = Measurement(run_uid=job.run_uid) if job.run_uid else Measurement()
    sampler: UtilizationSampler | None = None
    progress: IO[str] | None = None
    code = 0
    workload: Workload | None = None
    try:
        workload = entry.factory(params)
        out.workload_info = dict(workload.describe())
        if choice is not None:
            out.workload_info["precision"] = choice.to_dict()
        out.system = capture_system()
        out.write(args.out)  # "still running": the environment is kept if the rank dies
        events.emit("environment", **environment_fields(out.system))
        if args.progress is not None:
            progress = args.progress.open("a", buffering=1)
        origin = time.perf_counter()
        if deadline is not None and plan.budget_s is not None:  # the budget counts from the command's start
            plan = dataclasses.replace(plan, budget_s=max(1e-3, deadline - time.time()))
        sampler = UtilizationSampler(interval, origin=origin).start()
        run_plan(
            workload,
            plan,
            measurement,
            origin=origin,
            on_step=progress_writer(progress),
            rank=rank,
            on_projection=lambda p: events.emit("projection", **projection_fields(p, plan, choice, params)),
        )
        evaluation = run_evaluation(workload, origin) if measurement.complete else None  # after every timed window
        if evaluation is not None:
            out.workload_info[EVALUATION_KEY] = evaluation
        trajectory = timed_pass(workload.loss_trajectory, origin) if measurement.complete else None  # after it
        if trajectory is not None:
            out.workload_info[TRAJECTORY_KEY] = trajectory
    except (KeyboardInterrupt, Interrupted) as exc:
        why = f"{exc or 'SIGINT'}: {lifeline.lost_reason()}" if lifeline and lifeline.lost_reason() else exc
        out.error = f"interrupted ({why or 'SIGINT'}) after {len(measurement.steps)} steps"
        traceback.print_exc()
        code = 130
    except WorkloadRefused as exc:  # a known refusal before the first step: its message is the whole story
        out.error = str(exc)
        print(f"rank {rank}: {exc}", file=sys.stderr)
        code = 2
    except Exception as exc:
        out.error = describe_error(exc)
        traceback.print_exc()
        code = 1
    finally:
        if sampler is not None:
            out.utilization = sampler.stop()
        if progress is not None:
            progress.close()
        events.close()
        out.complete = measurement.complete and code == 0
        out.steps = list(measurement.steps)
        out.windows = list(measurement.windows)
        out.run_uid, out.origin_unix_s, out.plan = measurement.run_uid, measurement.origin_unix_s, measurement.plan
        out.write(args.out)
    if lifeline is not None and lifeline.lost_reason():
        lifeline.exit_now(code, out.error)  # the supervisor is gone: nobody waits for an orderly teardown
    if world > 1 and code == 0 and workload is not None:
        try:
            gathered = gather_ranks(out.to_json(), rank, world, workload)
            if gathered is not None:
                ranks = [RankMeasurement.model_validate(m) for m in gathered]
                out.model_copy(update={"ranks": ranks}).write(args.out)
        except Exception as exc:  # a rank died after its loop: rank 0's own record stays, marked incomplete
            out.complete, out.error = False, f"gathering the ranks' records failed: {exc}"
            out.write(args.out)
            code = 1
    if workload is not None:
        try:
            workload.shutdown()
        except Exception as exc:  # the measurement is written; leaving the job must not turn it into a failure
            print(f"warning: leaving the distributed job failed: {exc}", file=sys.stderr)
    if out.error:
        print(out.error, file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
