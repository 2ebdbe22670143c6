"""``make bench``: benchmarks that print figures (not tests).

1. Harness overhead. In one process, the harness and a bare loop (the seed study's
   loop: enumerate a DataLoader, zero_grad, forward, loss, backward, step, timed
   with perf_counter) alternate over the same model configuration, batch,
   precision, data and step count. Printed: harness throughput / bare throughput
   per pair and their median (target >= 0.99).
2. The CPU optimization ladder on this machine (fp32, bf16, bf16+channels_last,
   +torch.compile, +jemalloc), each run through the real `trainbench run` path,
   printed beside the seed study's c7i.2xlarge table and the bare-loop figures
   measured on this project's 2-vCPU Zen 4 machine (shared/CONTEXT.md).
"""

from __future__ import annotations

import contextlib
import json
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from suite.run.execute import execute
from suite.run.options import RunError, RunOptions
from suite.specs import resolve

SEED_C7I: dict[str, float | None] = {
    "fp32": 9.12,
    "bf16": 24.34,
    "bf16+channels_last": 37.93,
    "+compile": None,  # the study found compile helped only WITHOUT channels_last
    "+jemalloc": 39.05,  # the study's next rung was run_cpu (tcmalloc + Intel OpenMP)
}
"""samples/s, batch 128, c7i.2xlarge. Source: C. Rand, "Training AI Models on CPU", Sep 2024."""

BARE_HERE: dict[str, float | None] = {
    "fp32": 4.31,
    "bf16": 10.72,
    "bf16+channels_last": 13.36,
    "+compile": None,
    "+jemalloc": None,
}
"""samples/s, bare loop, batch 16, 2-vCPU AMD EPYC Zen 4, torch 2.14.1 (shared/CONTEXT.md)."""

LADDER: list[tuple[str, list[str]]] = [
    ("fp32", ["precision=fp32", "channels_last=false"]),
    ("bf16", ["precision=bf16", "channels_last=false"]),
    ("bf16+channels_last", ["precision=bf16", "channels_last=true"]),
    ("+compile", ["precision=bf16", "channels_last=true", "compile=inductor"]),
    ("+jemalloc", ["precision=bf16", "channels_last=true", "compile=inductor", "allocator=jemalloc"]),
]


@dataclass
class OverheadPair:
    """One side-by-side pair: throughputs in samples/s."""

    bare: float
    harness: float

    @property
    def ratio(self) -> float:
        """harness / bare."""
        return self.harness / self.bare


def _bare_loop(
    model: Any, optimizer: Any, criterion: Any, loader: Any, steps: int, skip: int, bf16: bool, channels_last: bool
) -> float:
    """The seed study's loop: samples/s over steps after the first ``skip``."""
    import torch

    total = 0.0
    count = 0
    t0 = time.perf_counter()
    for idx, (data, target) in enumerate(loader):
        if channels_last:
            data = data.contiguous(memory_format=torch.channels_last)
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = criterion(model(data), target)
        loss.backward()
        optimizer.step()
        batch_time = time.perf_counter() - t0
        if idx >= skip:
            total += batch_time
            count += 1
        if count == steps:
            break
        t0 = time.perf_counter()
    return float(count * loader.batch_size / total)


def overhead(pairs: int, steps: int, batch_size: int, console: Console) -> list[OverheadPair]:
    """Alternate bare loop and harness ``pairs`` times; see the module docstring."""
    import torch
    import torchvision

    from harness.loop import run_plan
    from harness.sampler import UtilizationSampler
    from harness.stats import summarize
    from harness.windows import RunPlan, Window
    from workloads.resnet50_cpu.data import SyntheticImages, make_loader
    from workloads.resnet50_cpu.params import ResNet50CPUParams
    from workloads.resnet50_cpu.workload import ResNet50CPU

    params = ResNet50CPUParams(batch_size=batch_size, precision="bf16", channels_last=True)
    workload = ResNet50CPU(params)
    torch.manual_seed(0)
    model = torchvision.models.resnet50().to(memory_format=torch.channels_last).train()
    optimizer = torch.optim.SGD(model.parameters(), lr=params.lr)
    criterion = torch.nn.CrossEntropyLoss()
    loader = make_loader(SyntheticImages(224, 1000), batch_size, 0, False, 0)
    skip = 2
    plan = RunPlan(Window(skip, 0.0), Window(steps, 0.0))
    out: list[OverheadPair] = []
    for i in range(pairs):
        bare = _bare_loop(model, optimizer, criterion, loader, steps, skip, True, True)
        origin = time.perf_counter()
        with UtilizationSampler(0.5, origin=origin):
            m = run_plan(workload, plan, origin=origin)
        harness = summarize(m.steps, m.windows).throughput
        out.append(OverheadPair(bare, harness))
        console.print(
            f"pair {i + 1}/{pairs}: bare {bare:.3f}  harness {harness:.3f} samples/s  ratio {harness / bare:.4f}"
        )
    return out


def ladder(batch_size: int, steps: int, output_dir: Path, console: Console) -> dict[str, float | None]:
    """Run each rung through the real run path; returns samples/s per rung (None if it failed)."""
    figures: dict[str, float | None] = {}
    for name, overrides in LADDER:
        config = resolve(
            "resnet50-cpu",
            "quick",
            [
                *overrides,
                f"batch_size={batch_size}",
                "warmup_steps=3",
                "warmup_seconds=0",
                f"measure_steps={steps}",
                "measure_seconds=0",
                "repeats=1",
            ],
        )
        t0 = time.perf_counter()
        try:
            outcome = execute(config, RunOptions(output_dir=output_dir, tracking_uri=None))
        except RunError as exc:
            console.print(f"[red]{name} failed:[/red] {escape(str(exc))}")
            figures[name] = None
            continue
        s = outcome.result.summary
        figures[name] = s.throughput if s else None
        console.print(
            f"{name:<20} {figures[name] or 0:8.2f} samples/s  ({time.perf_counter() - t0:.0f} s, "
            f"first step {s.first_step_s if s else 0:.1f} s) -> {outcome.result_path}"
        )
    return figures


def _x(v: float | None, base: float | None) -> str:
    return "-" if v is None or not base else f"{v / base:.2f}x"


def report(pairs: list[OverheadPair], figures: dict[str, float | None], batch_size: int, console: Console) -> None:
    """Print the overhead ratio and the ladder table."""
    if pairs:
        ratios = [p.ratio for p in pairs]
        med = statistics.median(ratios)
        verdict = "[green]meets[/green]" if med >= 0.99 else "[red]misses[/red]"
        console.print(
            f"\nHarness overhead: harness/bare = {med:.4f} (median of {len(pairs)} pairs; "
            f"range {min(ratios):.4f}-{max(ratios):.4f}) {verdict} the >= 0.99 target"
        )
    if figures:
        t = Table(title=f"ResNet-50 CPU ladder (cumulative), batch {batch_size} here vs the seed study (batch 128)")
        for col in (
            "rung",
            "here, harness",
            "x fp32",
            "here, bare loop (CONTEXT)",
            "x fp32",
            "c7i.2xlarge (seed)",
            "x fp32",
        ):
            t.add_column(col, justify="right" if col != "rung" else "left")
        for name, _ in LADDER:
            v = figures.get(name)
            t.add_row(
                name,
                "-" if v is None else f"{v:.2f}",
                _x(v, figures.get("fp32")),
                "-" if BARE_HERE[name] is None else f"{BARE_HERE[name]:.2f}",
                _x(BARE_HERE[name], 4.31),
                "-" if SEED_C7I[name] is None else f"{SEED_C7I[name]:.2f}",
                _x(SEED_C7I[name], 9.12),
            )
        console.print(t)
        console.print(
            "seed '+jemalloc' cell is the study's run_cpu rung (tcmalloc + Intel OpenMP); its compile "
            "rung was measured without channels_last only (+~27%)."
        )


def main(part: str, pairs: int, steps: int, batch_size: int, output_dir: Path) -> dict[str, Any]:
    """Run the requested parts, print the figures and write them to ``output_dir/bench.json``."""
    console = Console()
    over: list[OverheadPair] = []
    figures: dict[str, float | None] = {}
    if part in ("overhead", "all"):
        console.rule("harness overhead (harness and bare loop alternate, one process)")
        over = overhead(pairs, steps, batch_size, console)
    if part in ("ladder", "all"):
        console.rule("CPU optimization ladder (each rung through `trainbench run`)")
        figures = ladder(batch_size, steps, output_dir, console)
    report(over, figures, batch_size, console)
    doc = {
        "batch_size": batch_size,
        "steps": steps,
        "overhead_pairs": [{"bare": p.bare, "harness": p.harness, "ratio": p.ratio} for p in over],
        "ladder": figures,
    }
    output_dir.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        (output_dir / "bench.json").write_text(json.dumps(doc, indent=1))
    return doc
