"""``make gpu-check`` (``trainbench gpu-check``): every GPU figure of issues 34 and 37 in one command and one table.

Two kinds of row, measured in the order that answers the most within the time budget
(default 460 s, inside the 8 minutes a lent GPU gives a check):

- **rungs** of the GPU ladder (:mod:`suite.ladder.gpu_rungs`, their one home), synthetic data
  resident on the GPU, each in one process with bare and harness blocks interleaved
  (:mod:`suite.bench.gpu_overhead`): images/s, harness/bare with its 95% CI, the first step
  (compile, autotune, graph capture) apart from throughput, the step on the GPU (CUDA events)
  beside the host's launch time, power and samples per joule (NVML), and the loss trajectory's
  deviation from fp32 (:mod:`suite.ladder.numerics`);
- **pipelines**: the synthetic ceiling, then ``dataloader``, ``dali`` (eager and compiled) and
  ``tfdata-service`` on a generated ImageNet-like JPEG set, each a real ``trainbench run``
  (:mod:`suite.bench.pipelines`): images/s, share of the ceiling, input-bound fraction, CPU
  cores, GPU utilisation and samples per joule from the result.

A row that the budget cannot hold, or that cannot run here (no DALI or TensorFlow installed,
out of memory), is printed with the reason. The closing lines hold the issues' goals against
the figures: the ladder's best >= 6,000 images/s (stretch 7,200), harness/bare >= 0.99 at every
rung, ``dataloader`` >= 2,500 images/s, ``dali`` >= 90% of the ceiling eager and compiled.
With ``--device cpu`` the same code runs on the CPU, tiny, which is how CI tests it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from suite.bench.gpu_overhead import RungFigures, measure_rung
from suite.errors import TrainbenchError

RUNGS = ("fp32", "bf16", "channels_last", "compile", "max_autotune", "cudagraphs", "fused")
"""The GPU ladder's rungs the check measures (the batch-size search is ``trainbench ladder``'s)."""
EAGER_PIPELINES = ("dataloader", "dali", "tfdata-service")
COMPILED_PIPELINES = ("dali",)
ORDER = (
    ("rung", "channels_last"),
    ("pipelines", "eager"),
    ("rung", "compile"),
    ("rung", "cudagraphs"),
    ("rung", "fused"),
    ("pipelines", "compiled"),
    ("rung", "fp32"),
    ("rung", "bf16"),
    ("rung", "max_autotune"),
)
"""What the check measures, by priority: the eager ceiling and the real-data pipelines first, the
costly autotuning last. A pipeline group runs the synthetic ceiling, then its pipelines."""
ESTIMATE_S = {"rung": 45.0, "compiled-rung": 120.0, "max_autotune": 300.0, "eager": 200.0, "compiled": 200.0}
"""Seconds a task is expected to take on an H100 (a first guess: no GPU measured them yet)."""


@dataclass
class CheckSettings:
    """What the check runs.

    Attributes:
        device: ``cuda`` (a GPU host) or ``cpu`` (CI's tiny path).
        rows: the tasks to try, by name: rungs of :data:`RUNGS`, and ``eager`` / ``compiled`` for the
            pipeline groups.
        budget_s: seconds the check may take; a row whose estimate does not fit is not measured.
        overrides: ``--set`` for every row (batch_size, image_size, num_workers, ...).
        pairs, block_steps, warmup_steps: the in-process harness/bare blocks of a rung.
        images: JPEGs generated for the pipelines (when no ``data_dir`` is given); data_dir: a set to use.
        trajectory_steps: steps of the loss-trajectory pass of every rung (0: none).
    """

    device: str = "cuda"
    rows: tuple[str, ...] = tuple(name for _, name in ORDER)
    budget_s: float = 460.0
    overrides: tuple[str, ...] = ("batch_size=256",)
    pairs: int = 4
    block_steps: int = 20
    warmup_steps: int = 10
    images: int = 2048
    data_dir: Path | None = None
    trajectory_steps: int = 8


@dataclass
class CheckRow:
    """One row of the table: a rung's figures or a pipeline's, or why it has none."""

    name: str
    kind: str
    figures: dict[str, Any] = field(default_factory=dict)
    note: str | None = None


def _estimate(kind: str, name: str) -> float:
    if kind == "pipelines":
        return ESTIMATE_S[name]
    if name == "max_autotune":
        return ESTIMATE_S["max_autotune"]
    return ESTIMATE_S["compiled-rung" if name in ("compile", "cudagraphs", "fused") else "rung"]


def rung_params(settings: CheckSettings) -> dict[str, dict[str, Any]]:
    """Each GPU-ladder rung's workload params at the check's settings (from the ladder's own plan).

    Raises:
        suite.specs.ConfigError: an override is invalid.
    """
    from suite.ladder.rungs import plan_ladder, this_host

    base = [f"device={settings.device}", "engine=ddp", *settings.overrides]
    steps = settings.trajectory_steps
    plans = plan_ladder("resnet50-gpu-horovod", "quick", base, list(RUNGS), this_host(), trajectory_steps=steps)
    return {p.name: dict(p.config.params) for p in plans if p.config is not None} | {
        p.name: {"skip": p.skip} for p in plans if p.config is None
    }


def _rung_row(name: str, params: dict[str, Any], settings: CheckSettings, say: Callable[[str], None]) -> CheckRow:
    if "skip" in params:
        return CheckRow(name, "rung", note=f"skipped: {params['skip']}")
    figures: RungFigures = measure_rung(name, params, settings.pairs, settings.block_steps, settings.warmup_steps, say)
    return CheckRow(name, "rung", figures.to_dict(), figures.error)


def _pipeline_rows(
    group: str, settings: CheckSettings, data_dir: Path, output_dir: Path, console: Any
) -> list[CheckRow]:
    """The synthetic ceiling, then the group's pipelines, each a real run (``compiled``: with torch.compile)."""
    from suite.bench.pipelines import BenchSettings, run_pipelines

    pipelines = EAGER_PIPELINES if group == "eager" else COMPILED_PIPELINES
    extra = ("compile=inductor",) if group == "compiled" else ()
    one_rank = ("nproc_per_node=1",) if settings.device == "cpu" else ()  # a GPU host: one rank per GPU
    overrides = (f"device={settings.device}", "engine=ddp", *one_rank, *settings.overrides, *extra)
    suffix = "" if group == "eager" else f" ({group})"
    out = []
    for row in run_pipelines(BenchSettings(data_dir, pipelines, "quick", overrides), output_dir / group, console):
        figures = {k: v for k, v in row.__dict__.items() if k != "error"} | _gpu_figures(row.result)
        out.append(CheckRow(row.pipeline + suffix, "pipeline", figures, row.error))
    return out


def _gpu_figures(path: str | None) -> dict[str, Any]:
    """GPU utilisation, memory and samples per joule from a pipeline row's result file."""
    if path is None:
        return {}
    from suite.results import ResultError, read_result

    try:
        result = read_result(Path(path))
    except ResultError:
        return {}
    gpu = result.utilization_summary.gpu if result.utilization_summary is not None else None
    if gpu is None:
        return {}
    return {
        "util_percent_mean": gpu.util_mean_percent,
        "power_w_mean": gpu.power_mean_w,
        "samples_per_joule": gpu.samples_per_joule,
    }


def ensure_data(settings: CheckSettings, output_dir: Path, say: Callable[[str], None]) -> Path:
    """The JPEG set the pipelines read: ``settings.data_dir``, or one generated (about 500 x 375, 110 KB)."""
    if settings.data_dir is not None:
        return settings.data_dir
    from suite.datasets.image_sets import MakeSettings, make_imagenet_like

    root = output_dir / "imagenet-like"
    if not (root / "manifest.json").exists():
        classes = 16
        t0 = time.perf_counter()
        make = MakeSettings(classes=classes, images_per_class=max(1, settings.images // classes), seed=0)
        make_imagenet_like(root, make, jobs=8)
        say(f"generated {settings.images} JPEGs in {root} ({time.perf_counter() - t0:.0f} s)")
    return root


def run_check(settings: CheckSettings, output_dir: Path, console: Any) -> list[CheckRow]:
    """Measure the tasks of :data:`ORDER` that ``settings.rows`` names, within the budget; a task that
    does not fit is a row that says so, with the command that measures it alone.

    Raises:
        suite.specs.ConfigError: an override is invalid (before anything runs).
    """
    started = time.perf_counter()
    params = rung_params(settings)
    tasks = [(kind, name) for kind, name in ORDER if name in settings.rows]
    data_dir: Path | None = None
    rows: list[CheckRow] = []
    for kind, name in tasks:
        left = settings.budget_s - (time.perf_counter() - started)
        estimate = _estimate(kind, name)
        if estimate > left:
            note = (
                f"not measured: about {estimate:.0f} s, and {max(left, 0):.0f} s of the budget are left "
                f"(alone: make gpu-check ARGS='--rows {name}')"
            )
            rows.append(CheckRow(name, kind.rstrip("s"), note=note))
        elif kind == "rung":
            rows.append(_rung_row(name, params.get(name, {"skip": "not a GPU-ladder rung"}), settings, console.print))
        else:
            try:
                data_dir = data_dir or ensure_data(settings, output_dir, console.print)
                rows.extend(_pipeline_rows(name, settings, data_dir, output_dir, console))
            except TrainbenchError as exc:  # refused before it ran (a setting, a missing tool): the rows say why
                rows.append(CheckRow(name, "pipeline", note=f"not measured: {exc}"))
    return rows


def write_rows(rows: list[CheckRow], settings: CheckSettings, output_dir: Path) -> Path:
    """``gpu-check.json`` in ``output_dir``: the settings and every row."""
    doc = {
        "settings": {**settings.__dict__, "data_dir": str(settings.data_dir) if settings.data_dir else None},
        "rows": [r.__dict__ for r in rows],
    }
    path = output_dir / "gpu-check.json"
    output_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, default=str))
    return path
