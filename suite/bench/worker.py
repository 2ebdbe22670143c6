"""A long-lived rank that measures blocks on demand, for the docker/local benchmark
(:mod:`suite.bench.container`). One runs on the host and one in the image, each started from
the run's own launch plan, so both sides get what a run's rank gets (threads, allocator
preload, OpenMP variables, binding; in the container, ``docker run``'s options)::

    python -m suite.bench.worker --job job.json --system system.json [--progress progress.jsonl]

It builds the job's workload as ``workloads.rank`` does (the CPU precision decided on this
host first), runs the job's warm-up window once, writes the system description
(:func:`harness.system.capture_system`, what a result's ``environment`` holds) to ``--system``,
starts the utilization sampler as a rank does for its whole run, and prints ``{"ready": ...}``
with ``python_loop_s``, its interpreter's pure-Python speed (:func:`harness.interpreter.python_loop_s`).
Then each line ``block N`` on standard input runs :func:`harness.loop.run_plan` with a one-step
warm-up window and an N-step measurement window and answers one JSON line on standard output:
``throughput`` (samples/s of the measurement window, as a run's summary computes it),
``step_s`` (its mean step time, seconds), ``others_cores`` and ``own_cores`` (CPU that processes
outside this one's tree used meanwhile, and this process's own, in cores:
:func:`suite.bench.interference.block_cores`). ``stop`` or the end of standard input ends it
with exit 0; an error is answered as ``{"error": "..."}`` with exit 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.workload import Workload


def _answer(doc: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()


def _block(workload: Workload, steps: int, progress: IO[str] | None) -> dict[str, float]:
    from harness.loop import run_plan
    from harness.records import Phase
    from harness.windows import RunPlan, Window
    from suite.bench.interference import block_cores
    from workloads.events import progress_writer

    plan = RunPlan(Window(1, 0.0), Window(steps, 0.0))
    m, others, own = block_cores(lambda: run_plan(workload, plan, on_step=progress_writer(progress)))
    window = next(w for w in m.windows if w.phase is Phase.MEASUREMENT)
    seconds = window.seconds
    return {
        "throughput": window.samples / seconds,
        "step_s": seconds / window.steps,
        "others_cores": others,
        "own_cores": own,
    }


def serve(job_path: Path, system_path: Path, progress_path: Path | None, commands: IO[str]) -> int:
    """Build, warm up, then answer ``block N`` lines until ``stop`` (see the module docstring).

    Returns:
        0 after ``stop`` or the end of ``commands``.

    Raises:
        ValueError: a bad job file or command (the caller answers it as an error).
    """
    from harness.interpreter import python_loop_s
    from harness.loop import run_plan
    from harness.sampler import UtilizationSampler
    from harness.system import capture_system
    from harness.windows import RunPlan, Window
    from workloads import registry
    from workloads.cpu_precision import resolve_params
    from workloads.job import RankJob

    job = RankJob.read(job_path)
    entry = registry.get(job.workload)
    params = entry.params_model.model_validate(job.params)
    choice = None
    if entry.cpu_precision:
        params, choice = resolve_params(params)
    warmup = job.windows.plan().warmup
    workload = entry.factory(params)
    run_plan(workload, RunPlan(warmup, Window(1, 0.0)))
    system_path.write_text(json.dumps(capture_system()))
    loop_s = python_loop_s()  # before the sampler starts: nothing of this tree runs beside it
    progress = progress_path.open("a", buffering=1) if progress_path is not None else None
    sampler = UtilizationSampler(job.windows.sampler_interval_s).start()
    try:
        precision = choice.to_dict() if choice is not None else None
        _answer({"ready": True, "precision": precision, "python_loop_s": loop_s})
        for line in commands:
            words = line.split()
            if words == ["stop"]:
                break
            if len(words) != 2 or words[0] != "block" or not words[1].isdigit() or int(words[1]) < 1:
                raise ValueError(f"expected 'block N' (N >= 1) or 'stop', got {line.strip()!r}")
            _answer(_block(workload, int(words[1]), progress))
    finally:
        sampler.stop()
        if progress is not None:
            progress.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    """Serve blocks; see the module docstring for arguments and exit codes."""
    ap = argparse.ArgumentParser(prog="python -m suite.bench.worker")
    ap.add_argument("--job", required=True, type=Path)
    ap.add_argument("--system", required=True, type=Path)
    ap.add_argument("--progress", type=Path)
    args = ap.parse_args(argv)
    try:
        return serve(args.job, args.system, args.progress, sys.stdin)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # one line for the coordinator, the traceback for the worker's log
        import traceback

        traceback.print_exc()
        _answer({"error": f"{type(exc).__name__}: {exc}"})
        return 1


if __name__ == "__main__":
    sys.exit(main())
