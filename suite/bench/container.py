"""Local and container throughput of the same config (issue 13, item 6): docker/local with its CI.

Pairs of whole runs through the real run path (:func:`suite.run.execute.execute`): one on the
host, one with ``--runtime docker`` in the workload's image, same small config, order
alternating from pair to pair. Each run's throughput is its measurement window's; the ratio
docker/local of each pair is summarized by its median and a distribution-free 95% CI
(:mod:`suite.bench.ratios`). The first pair's environments, as the ranks read them back, are
compared field by field (:func:`environment_differences`), so a gap can be traced to what the
two sides really ran with: threads, allocator and OpenMP libraries, performance variables,
binding, torch build, Python build.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from suite.bench.ratios import RatioSummary, summarize_ratios

GOAL = (0.98, 1.02)
"""Issue 13's goal: docker/local within 2%."""

COMPARED: tuple[tuple[str, ...], ...] = (
    ("python", "version"),
    ("python", "build"),
    ("torch", "version"),
    ("torch", "num_threads"),
    ("torch", "num_interop_threads"),
    ("torch", "cpu_capability"),
    ("libraries",),
    ("loaded_libraries",),
    ("env",),
    ("binding",),
    ("container", "cgroup_cpus"),
)
"""Environment fields (paths into ``result.environment``) that can change throughput."""

IGNORED_ENV = frozenset({"TRAINBENCH_IMAGE", "TRAINBENCH_ROOT_PID", "TORCHINDUCTOR_CACHE_DIR"})
"""Variables that name where a run ran, not how fast: left out of the comparison."""


@dataclass(frozen=True)
class ContainerSettings:
    """What the docker/local benchmark runs.

    Attributes:
        pairs: (local, docker) run pairs (>= 6 for a bounded CI).
        batch_size: samples per step.
        image_size: square input size in pixels.
        warmup_steps: warm-up steps of each run.
        measure_steps: measured steps of each run.
        image: the image to run in (default: the workload spec's, trainbench-cpu).
    """

    pairs: int = 16
    batch_size: int = 16
    image_size: int = 224
    warmup_steps: int = 3
    measure_steps: int = 8
    image: str | None = None


@dataclass(frozen=True)
class RunPair:
    """One pair of runs: throughputs in samples/s, the result files, and the CPU other processes
    used during the more disturbed of the two measurement windows, in cores (each run's sampler)."""

    index: int
    docker_first: bool
    local: float
    docker: float
    local_result: str
    docker_result: str
    others_cores: float
    disturbed: bool

    @property
    def ratio(self) -> float:
        """docker / local."""
        return self.docker / self.local


@dataclass
class ContainerResult:
    """The pairs, the ratio summary and the first pair's environment differences."""

    settings: ContainerSettings
    pairs: list[RunPair]
    summary: RatioSummary | None
    differences: list[tuple[str, Any, Any]] = field(default_factory=list)

    @property
    def meets_goal(self) -> bool:
        """The median and the whole 95% CI lie within [0.98, 1.02]."""
        s = self.summary
        return s is not None and s.low is not None and s.high is not None and GOAL[0] <= s.low and s.high <= GOAL[1]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "settings": asdict(self.settings),
            "pairs": [{**asdict(p), "ratio": p.ratio} for p in self.pairs],
            "summary": self.summary.to_dict() if self.summary else None,
            "environment_differences": [{"field": f, "local": a, "docker": b} for f, a, b in self.differences],
            "meets_goal": self.meets_goal,
        }


def _get(env: dict[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = env
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def environment_differences(local: dict[str, Any], docker: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """``(field, local value, docker value)`` for each :data:`COMPARED` field that differs
    (dicts compared key by key; library paths compared by file name, since the two sides
    install the same wheels under different prefixes)."""
    out: list[tuple[str, Any, Any]] = []
    for path in COMPARED:
        a, b = _get(local, path), _get(docker, path)
        name = ".".join(path)
        if isinstance(a, dict) or isinstance(b, dict):
            a, b = a or {}, b or {}
            for key in sorted(set(a) | set(b)):
                if path == ("env",) and key in IGNORED_ENV:
                    continue
                va, vb = a.get(key), b.get(key)
                if path == ("loaded_libraries",):
                    va = sorted(Path(p).name for p in va or [])
                    vb = sorted(Path(p).name for p in vb or [])
                if va != vb:
                    out.append((f"{name}.{key}", va, vb))
        elif a != b:
            out.append((name, a, b))
    return out


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
            f"measure_steps={settings.measure_steps}",
            "measure_seconds=0",
            "repeats=1",
        ],
    )


def measure_container(
    settings: ContainerSettings, output_dir: Path, say: Callable[[str], None], warn: Callable[[str], None]
) -> ContainerResult:
    """Run the interleaved local/docker pairs; ``say`` gets one line per pair.

    Raises:
        suite.containers.errors.ContainerError: no engine, no docker CLI, or no image (nothing ran).
        suite.run.options.RunError: a run failed (its result is kept in ``output_dir``).
    """
    from suite.containers.runtime import DockerRunOptions, prepare
    from suite.run.execute import execute
    from suite.run.options import RunOptions

    config = _config(settings)
    wrap = prepare(config, DockerRunOptions(image=settings.image), warn)  # engine and image checked first
    local_opts = RunOptions(output_dir=output_dir / "local", tracking_uri=None)
    docker_opts = RunOptions(output_dir=output_dir / "docker", tracking_uri=None, wrap=wrap)
    say(
        f"resnet50-cpu, batch {settings.batch_size}, {settings.image_size}px, {config.params.get('precision')} + "
        f"channels_last, {settings.warmup_steps} warm-up + {settings.measure_steps} measured steps per run; "
        f"{settings.pairs} pairs of runs, local and in {config.image if settings.image is None else settings.image}"
    )
    pairs: list[RunPair] = []
    differences: list[tuple[str, Any, Any]] = []
    for i in range(settings.pairs):
        docker_first = i % 2 == 1
        outcomes = {}
        for side in ("docker", "local") if docker_first else ("local", "docker"):
            outcomes[side] = execute(config, docker_opts if side == "docker" else local_opts)
        local, docker = outcomes["local"].result, outcomes["docker"].result
        if local.summary is None or docker.summary is None:
            raise ValueError("a complete run has a summary")  # execute raises RunError otherwise
        if i == 0:
            differences = environment_differences(local.environment, docker.environment)
        usage = [r.utilization_summary for r in (local, docker) if r.utilization_summary is not None]
        pair = RunPair(
            i,
            docker_first,
            local.summary.throughput,
            docker.summary.throughput,
            str(outcomes["local"].result_path),
            str(outcomes["docker"].result_path),
            max((u.others_cores or 0.0 for u in usage), default=0.0),
            any(u.disturbed for u in usage),
        )
        pairs.append(pair)
        say(
            f"pair {i + 1}/{settings.pairs} ({'docker' if docker_first else 'local'} first): "
            f"local {pair.local:.3f}  docker {pair.docker:.3f} samples/s  ratio {pair.ratio:.4f}  "
            f"others {pair.others_cores:.2f} cores" + ("  (disturbed)" if pair.disturbed else "")
        )
    return ContainerResult(settings, pairs, summarize_ratios([p.ratio for p in pairs]), differences)


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
    lines = [
        f"docker/local = {s.describe()} {verdict} [{GOAL[0]}, {GOAL[1]}] (the whole CI must be);",
        f"  range {s.minimum:.4f}-{s.maximum:.4f}, geometric mean {s.geometric_mean:.4f}; {s.method}",
        f"  {disturbed} of {len(result.pairs)} pairs disturbed (a run's sampler flagged its measurement window)",
    ]
    if result.differences:
        lines.append("  what the two sides ran with differs in:")
        lines += [f"    {name}: local {a!r}, docker {b!r}" for name, a, b in result.differences]
    else:
        lines.append("  both sides ran with the same threads, libraries, variables, binding and torch/Python builds")
    return "\n".join(lines)
