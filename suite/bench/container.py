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
docker/local is the median of all sessions' quad ratios with its distribution-free 95% CI
(:mod:`suite.bench.ratios`). Several sessions, each with fresh processes, keep one process's
luck (its memory layout, its start-up) from deciding the figure; each session's median is
reported, and the goal holds only when the pooled CI and every session's median lie within
[0.98, 1.02]. The first session's system descriptions, as the workers captured them, are
compared field by field (:func:`suite.bench.environment.environment_differences`), so a gap can
be traced to what the two sides really ran with: threads, allocator and OpenMP libraries,
performance variables, binding, torch build, Python build. Each block's own CPU time says
whether a side was kept off its CPUs, and each worker's pure-Python loop
(:func:`harness.interpreter.python_loop_s`) how fast its interpreter is.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from suite.bench.environment import environment_differences
from suite.bench.ratios import RatioSummary, quad_ratios, summarize_ratios
from suite.run.options import new_stamped_dir

GOAL = (0.98, 1.02)
"""Issue 13's goal: docker/local within 2%."""

SIDES = ("local", "docker")


@dataclass(frozen=True)
class ContainerSettings:
    """What the docker/local benchmark runs.

    Attributes:
        sessions: sessions, each with a fresh local and a fresh container worker (>= 1).
        pairs: (local, docker) block pairs per session (>= 2; two make a quad; 6 quads in all
            bound a 95% CI).
        block_steps: measured steps per block, after one warm-up step.
        batch_size: samples per step.
        image_size: square input size in pixels.
        warmup_steps: each worker's warm-up steps before its first block.
        image: the image to run in (default: the workload spec's, trainbench-cpu).
    """

    sessions: int = 4
    pairs: int = 20
    block_steps: int = 2
    batch_size: int = 16
    image_size: int = 224
    warmup_steps: int = 3
    image: str | None = None


@dataclass(frozen=True)
class SidePair:
    """One pair of blocks: throughputs in samples/s, the CPU other processes used during
    the busier of the two blocks, in cores (above
    :data:`harness.utilization.OTHERS_CORES_THRESHOLD` the pair was disturbed), and each side's
    own CPU time over its block's wall-clock time, in cores (both near the job's threads when
    neither side was kept off its CPUs; None from a worker that does not report it, such as an
    image built before it did)."""

    session: int
    index: int
    docker_first: bool
    local: float
    docker: float
    others_cores: float
    local_cores: float | None = None
    docker_cores: float | None = None

    @property
    def disturbed(self) -> bool:
        """Other processes used more than the harness's interference threshold during the pair."""
        from harness.utilization import OTHERS_CORES_THRESHOLD

        return self.others_cores > OTHERS_CORES_THRESHOLD

    @property
    def ratio(self) -> float:
        """docker / local."""
        return self.docker / self.local


@dataclass
class ContainerResult:
    """The pairs, the ratio summaries (``summary``: all sessions' quads, the one the goal is judged
    on; ``sessions``: each session's quads), the first session's environment differences, and
    each side's pure-Python loop time per session (``python_loop_s["local"|"docker"]``, seconds)."""

    settings: ContainerSettings
    pairs: list[SidePair]
    summary: RatioSummary | None
    sessions: list[RatioSummary] = field(default_factory=list)
    differences: list[tuple[str, Any, Any]] = field(default_factory=list)
    python_loop_s: dict[str, list[float]] = field(default_factory=dict)

    @property
    def meets_goal(self) -> bool:
        """The pooled CI and every session's median lie within [0.98, 1.02]."""
        s, lo, hi = self.summary, *GOAL
        inside = s is not None and s.low is not None and s.high is not None and lo <= s.low and s.high <= hi
        return inside and all(lo <= x.median <= hi for x in self.sessions)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "settings": asdict(self.settings),
            "pairs": [{**asdict(p), "ratio": p.ratio, "disturbed": p.disturbed} for p in self.pairs],
            "summary": self.summary.to_dict() if self.summary else None,
            "sessions": [x.to_dict() for x in self.sessions],
            "environment_differences": [{"field": f, "local": a, "docker": b} for f, a, b in self.differences],
            "python_loop_s": self.python_loop_s,
            "meets_goal": self.meets_goal,
        }


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
        for side in SIDES:  # one after the other: the warm-ups do not compete
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
                f"others {pair.others_cores:.2f} cores, own {_cores([pair.local_cores])}/{_cores([pair.docker_cores])}"
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
    from suite.containers.runtime import DockerRunOptions, prepare

    config = _config(settings)
    wrap = prepare(config, DockerRunOptions(image=settings.image), warn)  # engine and image checked first
    say(
        f"resnet50-cpu, batch {settings.batch_size}, {settings.image_size}px, {config.params.get('precision')} + "
        f"channels_last; {settings.sessions} sessions of {settings.pairs} pairs of {settings.block_steps}-step "
        f"blocks, local and in {config.image if settings.image is None else settings.image}"
    )
    output_dir = new_stamped_dir(output_dir)  # one per call: a second run into the same folder works beside it
    pairs: list[SidePair] = []
    sessions: list[RatioSummary] = []
    differences: list[tuple[str, Any, Any]] = []
    quads: list[float] = []
    loops: dict[str, list[float]] = {side: [] for side in SIDES}
    for index in range(settings.sessions):
        got, diff, loop = _session(index, config, wrap, settings, output_dir, say)
        if index == 0:
            differences = diff
        for side, seconds in loop.items():
            loops[side].append(seconds)
        pairs += got
        mine = quad_ratios([p.docker for p in got], [p.local for p in got])
        quads += mine
        sessions.append(summarize_ratios(mine, unit="ABBA quads' ratios"))
    summary = summarize_ratios(quads, unit="ABBA quads' ratios, all sessions") if quads else None
    return ContainerResult(settings, pairs, summary, sessions, differences, loops)


def _own_cores(answer: dict[str, Any]) -> float | None:
    """A block answer's ``own_cores``; None where the worker did not report it."""
    value = answer.get("own_cores")
    return None if value is None else float(value)


def _cores(values: list[float | None]) -> str:
    """The mean of the reported values, to two places, or "not reported"."""
    got = [v for v in values if v is not None]
    return f"{statistics.fmean(got):.2f}" if got else "not reported"


def describe(result: ContainerResult) -> str:
    """The verdict lines ``make bench`` prints (rich markup)."""
    s = result.summary
    if s is None:
        return "docker/local: no pairs measured"
    if result.meets_goal:
        verdict = "[green]within[/green]"
    elif s.low is None or s.high is None:
        verdict = "[yellow]cannot decide whether it is within[/yellow]"
    else:
        verdict = "[red]not within[/red]"
    disturbed = sum(p.disturbed for p in result.pairs)
    inside = all(GOAL[0] <= x.median <= GOAL[1] for x in result.sessions)
    outside = f" (a session's median lies outside [{GOAL[0]}, {GOAL[1]}], and the goal needs every session inside)"
    lines = [
        f"docker/local = {s.describe()} {verdict} [{GOAL[0]}, {GOAL[1]}] (the whole CI must be);",
        f"  range {s.minimum:.4f}-{s.maximum:.4f}, geometric mean {s.geometric_mean:.4f}; {s.method}",
        "  per session: " + ", ".join(f"{x.median:.4f}" for x in result.sessions) + ("" if inside else outside),
        f"  {disturbed} of {len(result.pairs)} pairs disturbed (other processes busy on > 0.2 cores during a block)",
        f"  own CPU per block, mean: local {_cores([p.local_cores for p in result.pairs])}, "
        f"docker {_cores([p.docker_cores for p in result.pairs])} cores",
    ]
    if all(result.python_loop_s.get(side) for side in SIDES):
        local, docker = (statistics.median(result.python_loop_s[side]) for side in SIDES)
        lines.append(
            f"  pure-Python loop (harness.interpreter.python_loop_s, median of sessions): local {local * 1e3:.3f} ms, "
            f"docker {docker * 1e3:.3f} ms: the image's interpreter runs Python {local / docker:.3f}x as fast"
        )
    if result.differences:
        lines.append("  what the two sides ran with differs in:")
        lines += [f"    {name}: local {a!r}, docker {b!r}" for name, a, b in result.differences]
    else:
        lines.append("  both sides ran with the same threads, libraries, variables, binding and torch/Python builds")
    return "\n".join(lines)
