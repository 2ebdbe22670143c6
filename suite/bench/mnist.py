"""``trainbench bench-mnist``: the input-bound effect and offloading, in printed figures (issue 5).

Part 1, loader workers: mnist-dataheavy with the heavy chain, one training thread,
and 0, 1, 2 DataLoader workers (a sweep through the harness): throughput and
input-bound fraction.

Part 2, offload on one trainer core: the trainer pinned to one CPU with one torch
thread, preprocessing
  a) in the trainer with the DataLoader (torchvision chain),
  b) in the trainer with tf.data (TensorFlow chain, the one the service runs),
  c) on a tf.data service worker pinned to another CPU (dispatcher pinned there too),
  d) with ``--service-image``: on the same service run in containers of that image,
     cpuset-pinned to the other CPU (an extra CPU machine, simulated; the trainer
     reaches them over published loopback ports),
so (b), (c) and (d) differ only in where the same preprocessing runs.

The seed study's figures (1193 vs 184 ms/step, 6.5x) came from adding a 36-vCPU
machine to a GPU machine; on two cores the best offload can do is turn
1 / (p + c) into 1 / max(p, c) for preprocessing p and compute c per sample.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from suite.datasets.service import LocalService
from suite.run.execute import execute
from suite.run.options import RunError, RunOptions
from suite.run.sweep import SweepSpec, run_sweep
from suite.run.sweep_table import sweep_table
from suite.specs import resolve

WORKLOAD = "mnist-dataheavy"


@dataclass
class BenchSettings:
    """Knobs of the benchmark (every point uses them).

    Attributes:
        repeats: preprocess_repeats (k) of the heavy chain.
        batch_size: samples per step.
        measure_steps, measure_seconds: the measurement window's minimums.
        runs: repeats of warm-up + measurement per point.
        service_image: image for point (d), the tf.data service in pinned containers
            (None: point (d) is skipped).
    """

    repeats: int = 4
    batch_size: int = 64
    measure_steps: int = 20
    measure_seconds: float = 10.0
    runs: int = 2
    service_image: str | None = None

    def overrides(self) -> list[str]:
        """``--set`` overrides shared by every point."""
        return [
            f"preprocess_repeats={self.repeats}",
            f"batch_size={self.batch_size}",
            "warmup_steps=5",
            "warmup_seconds=3",
            f"measure_steps={self.measure_steps}",
            f"measure_seconds={self.measure_seconds}",
            f"repeats={self.runs}",
            "intra_op_threads=1",  # one training thread: on 2 shared cores, OpenMP spin-waits made 2 slower
        ]


def _point(label: str, overrides: list[str], opts: RunOptions, console: Console) -> dict[str, Any]:
    """Run one point; a failed point is a row with ``error`` (``interrupted: True`` after Ctrl-C/SIGTERM)."""
    console.print(f"[bold]{label}[/bold]: --set {' --set '.join(overrides)}", highlight=False)
    try:
        out = execute(resolve(WORKLOAD, None, overrides), opts)
    except RunError as exc:
        return {"label": label, "error": str(exc), "interrupted": exc.exit_code == 130}
    s, prep = out.result.summary, out.result.workload_info.get("preprocessing", {})
    assert s is not None
    return {
        "label": label,
        "throughput_samples_per_s": s.throughput,
        "step_time_median_ms": s.step_time_median_s * 1e3,
        "input_bound_fraction": s.input_bound_fraction,
        "verdict": out.result.diagnosis.verdict if out.result.diagnosis else None,
        "preprocessing": prep,
        "result_path": str(out.result_path),
    }


def offload_part(settings: BenchSettings, output_dir: Path, console: Console) -> list[dict[str, Any]]:
    """Part 2: trainer on the first allowed CPU; preprocessing there, or on a service worker on the last CPU.

    An interrupted point ends the part: the points after it are not run, and the
    service processes or containers started for it are stopped and removed.

    Raises:
        suite.datasets.service.DataServiceError: the service did not start.
    """
    cpus = sorted(os.sched_getaffinity(0))
    trainer, other = str(cpus[0]), str(cpus[-1])
    base = [*settings.overrides(), f"cpus={trainer}"]
    opts = RunOptions(output_dir=output_dir, tracking_uri=None)
    rows: list[dict[str, Any]] = []

    def stopped() -> bool:
        return bool(rows and rows[-1].get("interrupted"))

    local_torch = [*base, "input_pipeline=dataloader", "num_workers=0"]
    rows.append(_point("a) trainer preprocesses, DataLoader", local_torch, opts, console))
    if not stopped():
        local_tf = [*base, "input_pipeline=tfdata", "num_workers=0", "prefetch=0"]
        rows.append(_point("b) trainer preprocesses, tf.data", local_tf, opts, console))
    if not stopped():
        with LocalService([other], output_dir / "service-logs", dispatcher_cpus=other) as service:
            remote = [*base, "input_pipeline=tfdata-service", f"data_service={service.address}"]
            rows.append(_point(f"c) offloaded to a tf.data service worker on CPU {other}", remote, opts, console))
    if settings.service_image and not stopped():
        from suite.containers.errors import ContainerError
        from suite.containers.service import ContainerService

        label = f"d) offloaded to a tf.data service worker container pinned to CPU {other}"
        try:
            with ContainerService(settings.service_image, [other], dispatcher_cpus=other) as boxed:
                remote = [*base, "input_pipeline=tfdata-service", f"data_service={boxed.address}"]
                rows.append(_point(label, remote, opts, console))
        except ContainerError as exc:  # the points measured so far are still reported and written
            rows.append({"label": label, "error": str(exc)})
    return rows


def _offload_table(rows: list[dict[str, Any]], trainer_cpu: int) -> Table:
    t = Table(title=f"offload: trainer pinned to CPU {trainer_cpu}, 1 torch thread", title_justify="left")
    for col in ("configuration", "samples/s", "ms/step", "input-bound", "verdict", "prep ms/sample", "vs b)"):
        t.add_column(col, justify="left" if col in ("configuration", "verdict") else "right")
    ref = next((r.get("throughput_samples_per_s") for r in rows if r["label"].startswith("b)")), None)
    for r in rows:
        if "error" in r:
            t.add_row(r["label"], "[red]failed[/red]", "", "", r["error"][:200], "", "")
            continue
        x = r["throughput_samples_per_s"]
        t.add_row(
            r["label"],
            f"{x:.1f}",
            f"{r['step_time_median_ms']:.0f}",
            f"{r['input_bound_fraction']:.0%}",
            str(r["verdict"]),
            f"{r['preprocessing'].get('cpu_ms_per_sample', float('nan')):.2f}",
            f"{x / ref:.2f}x" if ref else "",
        )
    return t


def main(settings: BenchSettings, output_dir: Path, console: Console) -> int:
    """Run both parts, print their tables, write ``bench-mnist.json``; return the exit code.

    Exit codes: 0 all points measured, 1 a point failed, 130 interrupted (Ctrl-C or
    SIGTERM; what was measured is still printed and written).
    """
    output_dir.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()
    console.print(
        f"command: {shlex.join([Path(sys.argv[0]).name, *sys.argv[1:]])}\n"
        f"CPUs: {sorted(os.sched_getaffinity(0))}; load average at start {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}\n"
        f"chain: preprocess_repeats={settings.repeats} at 112x112 px, batch {settings.batch_size}",
        highlight=False,
    )
    console.rule("part 1: DataLoader workers (heavy chain, one training thread, all CPUs)")
    sweep = run_sweep(
        WORKLOAD,
        None,
        settings.overrides(),
        SweepSpec("num_workers", ("0", "1", "2")),
        RunOptions(output_dir=output_dir, tracking_uri=None),
    )
    rows1 = [p.row() for p in sweep.points]
    console.print(sweep_table("num_workers", rows1, f"{WORKLOAD}: loader workers"))
    console.print(f"plot: {sweep.plot_path}")
    rows2: list[dict[str, Any]] = []
    if not sweep.interrupted:
        console.rule("part 2: offload, trainer on one core")
        rows2 = offload_part(settings, output_dir, console)
        console.print(_offload_table(rows2, sorted(os.sched_getaffinity(0))[0]))
    load = os.getloadavg()
    console.print(f"load average at end {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f} (other processes share these CPUs)")
    path = output_dir / "bench-mnist.json"
    path.write_text(json.dumps({"settings": settings.__dict__, "workers": rows1, "offload": rows2}, indent=1) + "\n")
    console.print(f"figures: {path}")
    if sweep.interrupted or any(r.get("interrupted") for r in rows2):
        console.print("interrupted: the points above were measured; the rest did not run")
        return 130
    failed = [r for r in rows1 if r["status"] != "complete"] + [r for r in rows2 if "error" in r]
    return 1 if failed else 0
