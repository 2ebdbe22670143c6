"""Harness/bare on one GPU, rung by rung, interleaved in one process (issue 37: harness/bare >= 0.99 at every rung).

One process builds the GPU workload (``ResNet50GPU`` at world size 1, so it trains unwrapped)
in a rung's configuration, warms it up, and then alternates short blocks on the same model,
optimizer and resident batch:

- **bare**: the plain PyTorch loop in that configuration: ``zero_grad``, forward and loss under
  autocast, backward, ``optimizer.step``, with ``cudagraph_mark_step_begin`` when the step is
  captured as CUDA graphs; one untimed step, then ``block_steps`` steps between two
  ``torch.cuda.synchronize`` calls timed by ``perf_counter``;
- **harness**: :func:`harness.loop.run_plan` over ``Workload.step``, as a rank runs it (the
  device timer's CUDA events around each step, the loss flag, the window edges' synchronize),
  a one-step warm-up window, then a measurement window of ``block_steps`` steps.

The order alternates, so two consecutive pairs form an ABBA quad in which a linear drift
cancels (:func:`suite.bench.ratios.quad_ratios`), as ``make bench``'s CPU overhead part does
(:mod:`suite.bench.overhead`). The GPU's energy over the harness blocks comes from NVML's
total-energy counter (:class:`harness.nvml.NvmlReader`), read at each block's edges.
"""

from __future__ import annotations

import contextlib
import os
import socket
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from suite.bench.ratios import RatioSummary, quad_ratios, summarize_ratios

GOAL_RATIO = 0.99
"""Issue 37's goal: harness/bare >= 0.99 at every rung."""


@dataclass
class RungFigures:
    """One rung measured in one process.

    Attributes:
        name: the rung; params: the workload params it ran with.
        harness: median samples/s of the harness blocks; bare: of the bare blocks.
        summary: harness/bare over the ABBA quads (median and its 95% CI), or None (fewer than 2 pairs).
        first_step_s: seconds of the first step (compilation, autotuning, CUDA graph capture, cuDNN's search).
        warmup_s: seconds of the whole warm-up (first step included).
        device_step_ms: median step time on the GPU (CUDA events) in the harness blocks, or None on the CPU.
        host_step_ms: median host time per step (launching the step's kernels) in the harness blocks.
        power_w: mean board power over the harness blocks (NVML), or None.
        samples_per_joule: samples of the harness blocks over the board energy they took, or None.
        losses: the loss-trajectory pass's losses (``workloads/trajectory.py``), or None.
        error: why the rung could not be measured (out of memory, a compile failure), or None.
    """

    name: str
    params: dict[str, Any]
    harness: float | None = None
    bare: float | None = None
    summary: RatioSummary | None = None
    first_step_s: float | None = None
    warmup_s: float | None = None
    device_step_ms: float | None = None
    host_step_ms: float | None = None
    power_w: float | None = None
    samples_per_joule: float | None = None
    losses: list[float | None] | None = None
    error: str | None = None
    pairs: list[tuple[float, float]] = field(default_factory=list)

    @property
    def meets_goal(self) -> bool | None:
        """harness/bare's median >= 0.99 (None: not measured)."""
        return None if self.summary is None else self.summary.median >= GOAL_RATIO

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        out = {k: v for k, v in self.__dict__.items() if k != "summary"}
        return {**out, "summary": self.summary.to_dict() if self.summary else None, "meets_goal": self.meets_goal}


@contextlib.contextmanager
def single_process_group() -> Iterator[None]:
    """The environment torchrun gives a job of one rank (rank 0 of 1, a free loopback port), so the GPU
    workload's DDP engine joins a group of one; the variables are restored afterwards."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _bare_block(workload: Any, batch: Any, steps: int) -> float:
    """The plain loop: one untimed step, then ``steps`` steps timed between two device syncs; samples/s."""
    import torch

    x, y = batch
    for i in range(steps + 1):
        if i == 1:
            workload.synchronize()
            t0 = time.perf_counter()
        if workload.graphs:
            torch.compiler.cudagraph_mark_step_begin()  # type: ignore[no-untyped-call]
        workload.optimizer.zero_grad()
        dtype = workload.autocast_dtype
        with torch.autocast(workload.device.type, dtype=dtype, enabled=dtype is not None):
            loss = workload.criterion(workload.forward(x), y)
        loss.backward()
        workload.optimizer.step()
    workload.synchronize()
    return steps * int(x.shape[0]) / (time.perf_counter() - t0)


def _harness_block(workload: Any, steps: int) -> tuple[float, float | None, float]:
    """A rank's loop, one warm-up and ``steps`` measured steps: (samples/s, median device ms, median host ms)."""
    from harness.loop import run_plan
    from harness.records import Phase
    from harness.windows import RunPlan, Window

    m = run_plan(workload, RunPlan(Window(1, 0.0), Window(steps, 0.0)))
    window = next(w for w in m.windows if w.phase is Phase.MEASUREMENT)
    measured = [s for s in m.steps if s.phase is Phase.MEASUREMENT]
    device = [s.device_s for s in measured if s.device_s is not None]
    device_ms = statistics.median(device) * 1e3 if len(device) == len(measured) else None
    return window.samples / window.seconds, device_ms, statistics.median(s.compute_s for s in measured) * 1e3


def _energy_reader(workload: Any) -> Callable[[], tuple[float, float] | None]:
    """A function giving (energy J, power W) of the workload's GPU now, or None where NVML cannot say."""
    if workload.device.type != "cuda":
        return lambda: None
    import torch

    from harness.nvml import NvmlReader, NvmlUnavailable

    try:
        reader = NvmlReader([str(torch.cuda.get_device_properties(workload.device).uuid)])
    except NvmlUnavailable:
        return lambda: None

    def now() -> tuple[float, float] | None:
        readings = reader.read()
        if not readings or readings[0]["energy_j"] is None:
            return None
        return float(readings[0]["energy_j"]), float(readings[0]["power_w"] or 0.0)

    return now


def measure_rung(
    name: str, params: dict[str, Any], pairs: int, block_steps: int, warmup_steps: int, say: Callable[[str], None]
) -> RungFigures:
    """Build the workload with ``params`` (``ResNet50GPUParams``, world size 1), warm it up, then run
    ``pairs`` (bare, harness) block pairs in alternating order; a failure is the rung's ``error``.

    Raises:
        ValueError: ``pairs`` or ``block_steps`` below 1.
    """
    if pairs < 1 or block_steps < 1 or warmup_steps < 1:
        raise ValueError("pairs, block_steps and warmup_steps must be >= 1")
    from workloads.resnet50_gpu.params import ResNet50GPUParams
    from workloads.resnet50_gpu.workload import ResNet50GPU

    out = RungFigures(name, dict(params))
    try:
        with single_process_group():
            workload = ResNet50GPU(ResNet50GPUParams.model_validate({**params, "engine": "ddp"}))
        batch = next(iter(workload.batches()))
        t0 = time.perf_counter()
        for i in range(warmup_steps):
            workload.step(batch)
            workload.synchronize()
            if i == 0:
                out.first_step_s = time.perf_counter() - t0
        out.warmup_s = time.perf_counter() - t0
        energy = _energy_reader(workload)
        joules = samples = 0.0
        powers: list[float] = []
        device_ms: list[float] = []
        host_ms: list[float] = []
        for i in range(pairs):
            harness_first = i % 2 == 1
            bare = None if harness_first else _bare_block(workload, batch, block_steps)
            before = energy()
            harness, dev, host = _harness_block(workload, block_steps)
            after = energy()
            if bare is None:
                bare = _bare_block(workload, batch, block_steps)
            if before is not None and after is not None and after[0] > before[0]:
                joules += after[0] - before[0]
                samples += (block_steps + 1) * float(params["batch_size"])
                powers.append(after[1])
            device_ms += [] if dev is None else [dev]
            host_ms.append(host)
            out.pairs.append((harness, bare))
            say(f"{name}: pair {i + 1}/{pairs}: harness {harness:.1f}  bare {bare:.1f} samples/s")
        out.harness = statistics.median(h for h, _ in out.pairs)
        out.bare = statistics.median(b for _, b in out.pairs)
        quads = quad_ratios([h for h, _ in out.pairs], [b for _, b in out.pairs])
        out.summary = summarize_ratios(quads, unit="ABBA quads' ratios") if quads else None
        out.device_step_ms = statistics.median(device_ms) if device_ms else None
        out.host_step_ms = statistics.median(host_ms)
        out.power_w = statistics.fmean(powers) if powers else None
        out.samples_per_joule = samples / joules if joules > 0 else None
        trajectory = workload.loss_trajectory()
        out.losses = None if trajectory is None else list(trajectory["losses"])
        workload.shutdown()
    except Exception as exc:  # a rung that cannot run here (out of memory, a compile error) is a row with its reason
        out.error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        say(f"{name}: not measured: {out.error}")
    return out
