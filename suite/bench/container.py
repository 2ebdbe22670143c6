"""Local and container throughput of the same config (issue 13, item 6): docker/local with its CI.

Pairs of whole runs could not decide it: a run's throughput varies by 5-15% from one to the
next on this machine class, and within a process the step time jumps between levels some 20%
apart for ten-odd seconds. So each session starts two long-lived block workers
(:mod:`suite.bench.worker`) from the run's own launch plan, one on the host and one in the
workload's image through the run's own ``docker run`` (:mod:`suite.bench.sessions`): same job,
same threads, allocator preload and variables a run's rank gets. Both warm up (one after the
other), then the session alternates blocks of ``block_steps`` measured steps (each after one
warm-up step, through :func:`harness.loop.run_plan`), local and docker, the order alternating
from pair to pair; only one side computes at a time, the other waits on its standard input.
Two consecutive pairs form an ABBA quad (:func:`suite.bench.ratios.quad_ratios`).
Several sessions, each with fresh processes, keep one process's luck (its memory layout, its
start-up) from deciding the figure. The worker started second runs faster (by 2.7% on a Xeon,
measured with two local workers), so sessions alternate which side starts first, and
docker/local is the median of order-balanced ratios, each the geometric mean of a quad of a
local-first session and one of a docker-first session, with its distribution-free 95% CI
(:func:`suite.bench.container_result.summarize_sessions`, :mod:`suite.bench.ratios`). The goal
holds only when the start order is balanced and that CI lies within [0.98, 1.02]; each
session's median is reported with its start order, and the order effect beside the figure.
The first session's system descriptions, as the workers captured them, are compared field by field
(:func:`suite.bench.environment.environment_differences`), so a gap can be traced to what the
two sides really ran with: threads, allocator and OpenMP libraries, performance variables,
binding, torch build, Python build, huge pages. Each block's own CPU time says
whether a side was kept off its CPUs, and each worker's pure-Python loop
(:func:`harness.interpreter.python_loop_s`) how fast its interpreter is.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from suite.bench.container_result import (
    SIDES,
    ContainerResult,
    ContainerSettings,
    SidePair,
    first_started,
    summarize_sessions,
)
from suite.bench.environment import environment_differences
from suite.run.options import new_stamped_dir


def _config(settings: ContainerSettings) -> Any:
    from harness.precision import choose_precision
    from harness.system import read_isa
    from suite.specs import resolve

    precision = choose_precision("auto", read_isa()).chosen
    return resolve(
        "resnet50-cpu",
        "quick",
        [
            f"precision={precision}",
            "channels_last=true",
            f"batch_size={settings.batch_size}",
            f"image_size={settings.image_size}",
            f"warmup_steps={settings.warmup_steps}",
            "warmup_seconds=0",
            "measure_seconds=0",
            "repeats=1",
        ],
    )


def _session(
    index: int, config: Any, wrap: Any, settings: ContainerSettings, output_dir: Path, say: Callable[[str], None]
) -> tuple[list[SidePair], list[tuple[str, Any, Any]], dict[str, float]]:
    """One session: both workers started and warmed up, ``settings.pairs`` pairs of blocks.
    Returns the pairs, the environment differences and each side's pure-Python loop time (s)."""
    from suite.bench.sessions import start_worker

    timeout_s = float(config.launch.startup_timeout_s) + float(config.launch.stall_timeout_s) * (
        settings.warmup_steps + 1
    )
    block_timeout_s = float(config.launch.stall_timeout_s) * (settings.block_steps + 1)
    workers = {}
    loops: dict[str, float] = {}
    try:
        first = first_started(index)  # alternating: the worker started second runs faster
        say(f"session {index + 1}: the {first} worker starts first")
        for side in sorted(SIDES, key=lambda s: s != first):  # one after the other: the warm-ups do not compete
            workers[side] = start_worker(
                side, config, output_dir / f"session{index + 1}-{side}", wrap if side == "docker" else None
            )
            loop_s = workers[side].receive(timeout_s).get("python_loop_s")
            if loop_s is not None:
                loops[side] = float(loop_s)
        systems = {side: json.loads((w.run_dir / "system.json").read_text()) for side, w in workers.items()}
        pairs: list[SidePair] = []
        for i in range(settings.pairs):
            docker_first = i % 2 == 1
            got: dict[str, dict[str, Any]] = {}
            for side in SIDES[::-1] if docker_first else SIDES:
                workers[side].send(f"block {settings.block_steps}")
                got[side] = workers[side].receive(block_timeout_s)
            pair = SidePair(
                index,
                i,
                docker_first,
                float(got["local"]["throughput"]),
                float(got["docker"]["throughput"]),
                max(float(got[side]["others_cores"]) for side in got),
                _own_cores(got["local"]),
                _own_cores(got["docker"]),
            )
            pairs.append(pair)
            say(
                f"session {index + 1}, pair {i + 1}/{settings.pairs} ({'docker' if docker_first else 'local'} first): "
                f"local {pair.local:.3f}  docker {pair.docker:.3f} samples/s  ratio {pair.ratio:.4f}  "
                f"others {pair.others_cores:.2f} cores, own {_cores(pair.local_cores)}/{_cores(pair.docker_cores)}"
                + ("  (disturbed)" if pair.disturbed else "")
            )
    finally:
        for w in workers.values():
            w.stop()
    return pairs, environment_differences(systems["local"], systems["docker"]), loops


def measure_container(
    settings: ContainerSettings, output_dir: Path, say: Callable[[str], None], warn: Callable[[str], None]
) -> ContainerResult:
    """Run the sessions of interleaved local/docker blocks; ``say`` gets one line per pair.

    Raises:
        ValueError: a setting out of range.
        suite.containers.errors.ContainerError: no engine, no docker CLI, or no image (nothing ran).
        suite.bench.sessions.WorkerError: a worker failed or hung (its log is in a new directory under
            ``output_dir``, one per call: :func:`suite.run.options.new_stamped_dir`).
    """
    if settings.sessions < 1 or settings.pairs < 2 or settings.block_steps < 1 or settings.warmup_steps < 1:
        raise ValueError("sessions, block_steps and warmup_steps must be >= 1 and pairs >= 2")
    from suite.runtimes.docker import DockerRunOptions, DockerRuntime

    config = _config(settings)
    wrap = DockerRuntime(options=DockerRunOptions(image=settings.image), warn=warn).wrapper(config)  # checked first
    say(
        f"resnet50-cpu, batch {settings.batch_size}, {settings.image_size}px, {config.params.get('precision')} + "
        f"channels_last; {settings.sessions} sessions of {settings.pairs} pairs of {settings.block_steps}-step "
        f"blocks, local and in {config.image if settings.image is None else settings.image}"
    )
    output_dir = new_stamped_dir(output_dir)  # one per call: a second run into the same folder works beside it
    pairs: list[SidePair] = []
    differences: list[tuple[str, Any, Any]] = []
    loops: dict[str, list[float]] = {side: [] for side in SIDES}
    for index in range(settings.sessions):
        got, diff, loop = _session(index, config, wrap, settings, output_dir, say)
        if index == 0:
            differences = diff
        for side, seconds in loop.items():
            loops[side].append(seconds)
        pairs += got
    sessions, summary = summarize_sessions(pairs, settings.sessions)
    return ContainerResult(settings, pairs, summary, sessions, differences, loops)


def _own_cores(answer: dict[str, Any]) -> float | None:
    """A block answer's ``own_cores``; None where the worker did not report it."""
    value = answer.get("own_cores")
    return None if value is None else float(value)


def _cores(value: float | None) -> str:
    """A side's own CPU in cores, to two places, or "not reported"."""
    return "not reported" if value is None else f"{value:.2f}"
