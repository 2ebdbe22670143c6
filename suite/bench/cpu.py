"""``make bench``: the developers' benchmarks that print figures (not tests).

1. Harness overhead: blocks of bare-loop and harness steps interleaved in one process
   (:mod:`suite.bench.overhead`); harness/bare with its 95% CI and the harness's
   bookkeeping time per step. Goal: median >= 0.995, CI lower bound >= 0.99.
2. Local and container: blocks of steps interleaved between a long-lived rank on the host
   and one in the workload's image (:mod:`suite.bench.container`); docker/local with its
   95% CI and what the two sides ran with. Goal: within [0.98, 1.02].
3. The CPU optimization ladder on this machine (the rungs fp32, bf16, channels_last, compile and
   allocator of :mod:`suite.ladder.rungs`, skipped where they cannot help here), each run
   through the real `trainbench run` path,
   printed beside the seed study's c7i.2xlarge table and the bare-loop figures
   measured on this project's 2-vCPU Zen 4 machine (shared/CONTEXT.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from suite.bench.container import measure_container
from suite.bench.container_result import ContainerSettings
from suite.bench.container_result import describe as describe_container
from suite.bench.overhead import OverheadSettings, measure_overhead
from suite.bench.overhead import describe as describe_overhead
from suite.bench.sessions import WorkerError
from suite.console import warn
from suite.containers.errors import ContainerError
from suite.ladder.cpu_rungs import CPU
from suite.ladder.rungs import plan_ladder, this_host
from suite.launchers.allocators import GLIBC_MALLOC_TUNABLES, pin_glibc_malloc
from suite.run.execute import execute
from suite.run.options import RunError, RunOptions

BENCH_RUNGS = ("fp32", "bf16", "channels_last", "compile", "allocator")
"""The rungs of the CPU ladder (:mod:`suite.ladder.rungs`, their one home) that the bench climbs."""

SEED_C7I: dict[str, float | None] = {
    "fp32": 9.12,
    "bf16": 24.34,
    "channels_last": 37.93,
    "compile": None,  # the study found compile helped only WITHOUT channels_last
    "allocator": 39.05,  # the study's next rung was run_cpu (tcmalloc + Intel OpenMP)
}
"""samples/s, batch 128, c7i.2xlarge. Source: C. Rand, "Training AI Models on CPU", Sep 2024."""

BARE_HERE: dict[str, float | None] = {
    "fp32": 4.31,
    "bf16": 10.72,
    "channels_last": 13.36,
    "compile": None,
    "allocator": None,
}
"""samples/s, bare loop, batch 16, 2-vCPU AMD EPYC Zen 4, torch 2.14.1 (shared/CONTEXT.md)."""


def ladder(batch_size: int, steps: int, output_dir: Path, console: Console) -> dict[str, float | None]:
    """Run each rung of :data:`BENCH_RUNGS` that can help here through the real run path; returns samples/s
    per rung (None if it was skipped, with the reason printed, or failed)."""
    windows = ["warmup_steps=3", "warmup_seconds=0", f"measure_steps={steps}", "measure_seconds=0", "repeats=1"]
    overrides = [f"batch_size={batch_size}", *windows]
    # no loss-trajectory pass: the bench measures throughput (trainbench ladder checks the numerics)
    plans = plan_ladder("resnet50-cpu", "quick", overrides, list(BENCH_RUNGS), this_host(), trajectory_steps=0)
    figures: dict[str, float | None] = {}
    for plan in plans:
        figures[plan.name] = None
        if plan.config is None:
            console.print(f"{plan.label:<20} skipped: {escape(str(plan.skip))}")
            continue
        t0 = time.perf_counter()
        try:
            outcome = execute(plan.config, RunOptions(output_dir=output_dir, tracking_uri=None))
        except RunError as exc:
            console.print(f"[red]{plan.label} failed:[/red] {escape(str(exc))}")
            continue
        s = outcome.result.summary
        figures[plan.name] = s.throughput if s else None
        console.print(
            f"{plan.label:<20} {figures[plan.name] or 0:8.2f} samples/s  ({time.perf_counter() - t0:.0f} s, "
            f"first step {s.first_step_s if s else 0:.1f} s) -> {outcome.result_path}"
        )
    return figures


def _x(v: float | None, base: float | None) -> str:
    return "-" if v is None or not base else f"{v / base:.2f}x"


def ladder_table(figures: dict[str, float | None], batch_size: int, console: Console) -> None:
    """Print the ladder table beside the seed study's and the bare-loop figures."""
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
    for name in BENCH_RUNGS:
        v = figures.get(name)
        t.add_row(
            CPU.labels[name],
            "-" if v is None else f"{v:.2f}",
            _x(v, figures.get("fp32")),
            "-" if BARE_HERE[name] is None else f"{BARE_HERE[name]:.2f}",
            _x(BARE_HERE[name], 4.31),
            "-" if SEED_C7I[name] is None else f"{SEED_C7I[name]:.2f}",
            _x(SEED_C7I[name], 9.12),
        )
    console.print(t)
    console.print(
        "seed '+ allocator' cell is the study's run_cpu rung (tcmalloc + Intel OpenMP); its compile "
        "rung was measured without channels_last only (+~27%)."
    )


QUIET_LOAD = 1.5
"""A 1-minute load average at or above this on the machine makes the figures noise (2-vCPU machines)."""


@dataclass(frozen=True)
class BenchSettings:
    """What ``trainbench bench`` runs: the parts, and each part's settings."""

    parts: tuple[str, ...]
    overhead: OverheadSettings
    container: ContainerSettings
    ladder_steps: int = 10


def _machine() -> dict[str, Any]:
    """The CPU, its matrix flags and the load average: printed and stored beside every figure."""
    from harness.system import read_isa

    isa = read_isa()
    return {
        "cpu": isa.model,
        "flags": sorted(k for k, v in isa.features.items() if v),
        "logical_cores": os.cpu_count(),
        "load_average": list(os.getloadavg()),
    }


def _rank_malloc(say: Callable[[str], None]) -> str:
    """Give this process the malloc thresholds a rank gets (:func:`suite.launchers.plan_launch`):
    its own ``GLIBC_TUNABLES`` when it was started with one, else trainbench's, pinned now
    (:func:`suite.launchers.allocators.pin_glibc_malloc`). Returns what is in force, as text."""
    if "GLIBC_TUNABLES" in os.environ:
        return f"GLIBC_TUNABLES={os.environ['GLIBC_TUNABLES']} (this process's own)"
    try:
        pin_glibc_malloc()
    except ValueError as exc:
        say(f"malloc thresholds left as they are: {exc}")
        return f"not pinned: {exc}"
    say(f"malloc thresholds pinned as a rank's: {GLIBC_MALLOC_TUNABLES}")
    return GLIBC_MALLOC_TUNABLES


def main(settings: BenchSettings, output_dir: Path) -> dict[str, Any]:
    """Run the requested parts, print the figures and write them to ``output_dir/bench.json``.

    Raises:
        suite.run.options.RunError: a run of the ladder part failed.
        suite.bench.sessions.WorkerError: a docker/local worker failed or hung (raised after the
            other parts' figures are printed and written).
    """
    console = Console()
    machine = _machine()
    console.print(
        f"CPU: {escape(str(machine['cpu']))}, {machine['logical_cores']} logical cores, flags "
        f"{', '.join(machine['flags'])}; load average {machine['load_average'][0]:.2f}"
    )
    if machine["load_average"][0] >= QUIET_LOAD:
        warn(
            f"the load average is {machine['load_average'][0]:.2f}: figures taken under load are noise "
            f"(aim for < {QUIET_LOAD})"
        )
    doc: dict[str, Any] = {"machine": machine}
    verdicts: list[str] = []
    failure: WorkerError | None = None

    def say(line: str) -> None:
        console.print(escape(line))

    if "overhead" in settings.parts:
        console.rule("harness overhead (bare and harness blocks interleaved in one process)")
        malloc = _rank_malloc(say)
        over = measure_overhead(settings.overhead, say)
        doc["overhead"] = {**over.to_dict(), "malloc": malloc}
        verdicts.append(describe_overhead(over))
    if "docker" in settings.parts:
        console.rule("local and container (interleaved blocks of long-lived workers, same job)")
        try:
            cont = measure_container(settings.container, output_dir / "container", say, warn)
        except ContainerError as exc:
            doc["container"] = {"skipped": str(exc)}
            verdicts.append(f"docker/local: skipped: {escape(str(exc))}")
        except WorkerError as exc:  # the figures measured so far are still printed and written, then it fails
            failure = exc
            doc["container"] = {"failed": str(exc)}
            verdicts.append(f"[red]docker/local: failed[/red]: {escape(str(exc))}")
        else:
            doc["container"] = cont.to_dict()
            verdicts.append(describe_container(cont))
    if "ladder" in settings.parts:
        console.rule("CPU optimization ladder (each rung through `trainbench run`)")
        figures = ladder(settings.overhead.batch_size, settings.ladder_steps, output_dir, console)
        doc["ladder"] = figures
        ladder_table(figures, settings.overhead.batch_size, console)
    doc["load_average_after"] = list(os.getloadavg())
    console.rule("figures")
    for line in verdicts:
        console.print(line)
    console.print(f"load average before {machine['load_average'][0]:.2f}, after {doc['load_average_after'][0]:.2f}")
    output_dir.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        (output_dir / "bench.json").write_text(json.dumps(doc, indent=1))
        console.print(f"figures: {output_dir / 'bench.json'}")
    if failure is not None:
        raise failure
    return doc
