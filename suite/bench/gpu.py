"""``trainbench bench-gpu``: the GPU ladder of resnet50-gpu-horovod, printed beside the anchors.

Each rung (fp32, bf16, bf16+channels_last, +compile) at each batch size runs through the
real ``trainbench run`` path (harness windows, result JSON), on one or more GPUs. The
table gives images/s (all GPUs and per GPU), the utilization of the GPU's dense bf16
peak, and the ratio to the published anchors. Sources (shared/CONTEXT.md):

- ResNet-50 training costs about 24.6 GFLOP per 224x224 image (forward about 4.1 GMACs
  = 8.2 GFLOP; training about 3x forward);
- H100 / H200 dense bf16 peak about 989 TFLOP/s (NVIDIA data sheets), A100 312;
- Lambda's PyTorch AMP benchmark (synthetic data): A100 SXM4 1,582, H100 SXM5 2,790,
  H200 3,079 images/s per GPU; MLPerf Training v4.0 closed (MXNet + DALI) about 7,160
  per H100.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from suite.run.execute import execute
from suite.run.options import RunError, RunOptions
from suite.runtimes.base import Runtime
from suite.runtimes.local import LocalRuntime
from suite.specs import resolve

TRAIN_GFLOP_PER_IMAGE_224 = 24.6
"""GFLOP per training image at 224x224 (3 x 8.2 GFLOP forward); scales with pixel count."""

PEAK_BF16_TFLOPS: dict[str, float] = {"H200": 989.0, "H100": 989.0, "A100": 312.0}
"""Dense bf16 tensor-core peak by device-name substring, TFLOP/s (NVIDIA data sheets, SXM parts)."""

ANCHORS: dict[str, float] = {
    "Lambda PyTorch AMP, H100 SXM5": 2790.0,
    "Lambda PyTorch AMP, H200": 3079.0,
    "NVIDIA A100": 2470.0,
    "MLPerf v4.0 MXNet+DALI, per H100": 7160.0,
}
"""images/s per GPU (shared/CONTEXT.md)."""

TARGET_H100 = 3000.0
"""images/s on one H100 with bf16 + channels_last: the issue's target (stretch 4,000)."""

RUNGS: dict[str, list[str]] = {
    "fp32": ["precision=fp32", "channels_last=false", "compile=off"],
    "bf16": ["precision=bf16", "channels_last=false", "compile=off"],
    "bf16+channels_last": ["precision=bf16", "channels_last=true", "compile=off"],
    "+compile": ["precision=bf16", "channels_last=true", "compile=inductor"],
}


@dataclass
class Rung:
    """One measured cell: a rung at a batch size.

    Attributes:
        throughput: images/s of all ranks (None when the run failed).
        per_gpu: images/s per rank.
        utilization: fraction of the device's dense bf16 peak (None when unknown).
        device: the device name the rank read back.
        result: path of the result JSON.
    """

    rung: str
    batch_size: int
    throughput: float | None
    per_gpu: float | None
    utilization: float | None
    device: str
    result: str | None


def peak_tflops(device_name: str) -> float | None:
    """Dense bf16 peak of a device, TFLOP/s, from its name (None when unknown, e.g. a CPU)."""
    for key, value in PEAK_BF16_TFLOPS.items():
        if key in device_name:
            return value
    return None


def utilization(images_per_s_per_gpu: float, image_size: int, device_name: str) -> float | None:
    """Achieved training FLOP/s over the dense bf16 peak (0..1), or None for an unknown device."""
    peak = peak_tflops(device_name)
    if peak is None:
        return None
    flop = TRAIN_GFLOP_PER_IMAGE_224 * (image_size / 224) ** 2
    return images_per_s_per_gpu * flop * 1e9 / (peak * 1e12)


def run_ladder(
    rungs: list[str],
    batch_sizes: list[int],
    steps: int,
    extra: list[str],
    output_dir: Path,
    console: Console,
    runtime: Runtime | None = None,
    cells: list[Rung] | None = None,
    on_cell: Callable[[list[Rung]], None] | None = None,
) -> list[Rung]:
    """Run every (rung, batch size) through ``trainbench run``'s path; a failed cell is kept as None.

    Each cell is appended to ``cells`` (a new list by default) as soon as it ends, and
    ``on_cell(cells)`` is called then, so an interrupted ladder keeps the cells it measured.

    Raises:
        suite.specs.ConfigError: an override in ``extra`` is invalid.
        KeyboardInterrupt: Ctrl-C (or SIGTERM, with :func:`suite.console.stop_on_sigterm`) stopped
            a cell; that cell is in ``cells`` with no throughput and its incomplete result's path.
    """
    cells = [] if cells is None else cells
    for batch in batch_sizes:
        for name in rungs:
            config = resolve(
                "resnet50-gpu-horovod",
                "quick",
                [
                    *RUNGS[name],
                    f"batch_size={batch}",
                    "warmup_steps=10",
                    "warmup_seconds=0",
                    f"measure_steps={steps}",
                    "measure_seconds=0",
                    "repeats=1",
                    *extra,
                ],
            )
            t0 = time.perf_counter()
            try:
                opts = RunOptions(output_dir=output_dir, tracking_uri=None, runtime=runtime or LocalRuntime())
                outcome = execute(config, opts)
            except RunError as exc:
                console.print(f"[red]{name} at batch {batch} failed:[/red] {escape(str(exc))}")
                kept = str(exc.result_path) if exc.result_path else None
                cells.append(Rung(name, batch, None, None, None, "?", kept))
                if on_cell:
                    on_cell(cells)
                if exc.exit_code == 130:  # interrupted: the ladder stops here, not at the next cell
                    raise KeyboardInterrupt from exc
                continue
            r = outcome.result
            world = max(1, r.world_size)
            total = r.summary.throughput if r.summary else None
            per = total / world if total is not None else None
            device = str(r.workload_info.get("device_name", "?"))
            size = int(r.config.params.get("image_size", 224))
            util = utilization(per, size, device) if per is not None else None
            cells.append(Rung(name, batch, total, per, util, device, str(outcome.result_path)))
            if on_cell:
                on_cell(cells)
            console.print(
                f"{name:<20} batch {batch:>4}: {total or 0:10.1f} images/s on {world} x {device} "
                f"({time.perf_counter() - t0:.0f} s) -> {outcome.result_path}"
            )
    return cells


def print_gpu_table(cells: list[Rung], console: Console) -> None:
    """Print the ladder table, the anchors and the verdict on the 3,000 images/s target."""
    t = Table(title="ResNet-50 GPU ladder (resnet50-gpu-horovod, each cell through `trainbench run`)")
    for col in ("rung", "batch/GPU", "images/s", "per GPU", "% of bf16 peak", *ANCHORS):
        t.add_column(col, justify="left" if col == "rung" else "right")
    for c in cells:
        ratios = ["-" if c.per_gpu is None else f"{c.per_gpu / v:.2f}x" for v in ANCHORS.values()]
        t.add_row(
            c.rung,
            str(c.batch_size),
            "-" if c.throughput is None else f"{c.throughput:.1f}",
            "-" if c.per_gpu is None else f"{c.per_gpu:.1f}",
            "-" if c.utilization is None else f"{100 * c.utilization:.1f}%",
            *ratios,
        )
    console.print(t)
    best = [c for c in cells if c.rung == "bf16+channels_last" and c.per_gpu is not None and "H100" in c.device]
    if best:
        top = max(c.per_gpu or 0.0 for c in best)
        verdict = "[green]meets[/green]" if top >= TARGET_H100 else "[red]misses[/red]"
        console.print(f"bf16+channels_last on H100: {top:.0f} images/s per GPU {verdict} the >= 3,000 target")


def main(
    rungs: list[str],
    batch_sizes: list[int],
    steps: int,
    extra: list[str],
    output_dir: Path,
    runtime: Runtime | None = None,
) -> dict[str, Any]:
    """Run the ladder, print it, and write the figures to ``output_dir/bench-gpu.json``.

    The file is rewritten after every cell. When Ctrl-C or SIGTERM stops the ladder, the
    cells measured so far are printed and kept, and the document has ``"complete": false``.

    Returns:
        ``{"steps", "overrides", "complete", "cells": [Rung fields...], "path"}``.
    """
    console = Console()
    output_dir.mkdir(parents=True, exist_ok=True)
    path = output_dir / "bench-gpu.json"
    doc: dict[str, Any] = {"steps": steps, "overrides": extra, "complete": False, "cells": [], "path": str(path)}

    def save(cells: list[Rung]) -> None:
        doc["cells"] = [c.__dict__ for c in cells]
        with contextlib.suppress(OSError):
            path.write_text(json.dumps(doc, indent=1))

    cells: list[Rung] = []
    try:
        run_ladder(rungs, batch_sizes, steps, extra, output_dir, console, runtime, cells, save)
        doc["complete"] = True
    except KeyboardInterrupt:
        console.print(f"[yellow]bench-gpu interrupted after {len(cells)} cell(s)[/yellow]")
    print_gpu_table(cells, console)
    save(cells)
    return doc
