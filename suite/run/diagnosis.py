"""Which limit holds, in plain words, for every run, with the interference the sampler saw, and
what an interval too wide to decide needs.

input-bound fraction = data wait / (data wait + compute) over the measured steps:
the share of each step spent waiting for the input pipeline. A measurement window during
which other processes kept cores busy, or the hypervisor stole CPU time
(:mod:`harness.utilization`), makes the verdict say so: its throughput measures the
machine as shared, not the machine.

On a GPU the verdict names one of three limits:

- **input-bound** (or partly): the input pipeline is the limit, as on the CPU;
- **gpu-bound**: the GPU is busy: NVML's utilization (the share of time a kernel ran) is at
  least :data:`GPU_BUSY_PERCENT` over the measurement windows. A faster step needs less
  work per sample or a faster GPU;
- **host-bound**: the host cannot launch kernels fast enough: the GPU is often idle (NVML's
  utilization below :data:`GPU_BUSY_PERCENT`) while almost nothing waits for data. Without
  NVML readings the device step times decide: the device spent less than
  :data:`DEVICE_BUSY` of the wall clock inside steps (device time per step well below the
  wall-clock time per step). CUDA graphs or ``torch.compile`` cut the launches.

:data:`GPU_BUSY_PERCENT` is a working threshold, not a published one: a training loop that
keeps an H100 fed shows 95-100% in ``nvidia-smi``, and a gap of a tenth of the time is what
a CUDA graph or a larger batch typically wins back.

A throughput whose 95% CI is wider than :data:`DECISIVE_CI` (+-5%) cannot tell two
configurations a few per cent apart; :func:`interval_advice` says why (an input pipeline that
delivers batches unevenly, step times that still trend, or steps that vary) and what to change.
"""

from __future__ import annotations

import math
from typing import Any

from harness.stats import Summary
from harness.utilization import UtilizationSummary

INPUT_BOUND = 0.5
"""At or above this fraction the run is called input-bound."""
PARTLY_INPUT_BOUND = 0.1
"""At or above this fraction (and below INPUT_BOUND) the run is called partly input-bound."""
GPU_BUSY_PERCENT = 90.0
"""NVML utilization (0-100) at or above which the GPU counts as busy."""
DEVICE_BUSY = 0.9
"""Without NVML: share of the wall clock the device spent inside steps below which the host is the limit."""

DECISIVE_CI = 0.05
"""Relative half-width of the throughput's 95% CI above which a run cannot rank configurations (issue 34)."""
LOADER_CYCLES = 20
"""Loader cycles (batches in flight) a window of an input-bound run should span: its bursts then average out."""

HOST_FIX = (
    "capture the step as a CUDA graph or compile it (torch.compile), raise the batch size, "
    "or do less Python work per step"
)
INPUT_FIX = "add loader workers, decode on the GPU (DALI, nvJPEG) or offload preprocessing"


def _gpu_verdict(f: float, summary: Summary | None, util: UtilizationSummary | None) -> tuple[str, str] | None:
    """(verdict, text) on a GPU below the input-bound fractions; None when the run has no GPU evidence."""
    gpu = util.gpu if util is not None else None
    busy_pct = gpu.util_mean_percent if gpu is not None else None
    device = summary is not None and summary.step_time_source == "device"
    share = summary.device_busy_fraction if summary is not None and device else None
    if busy_pct is None and share is None:
        return None
    facts = []
    if busy_pct is not None:
        facts.append(f"NVML: GPU busy {busy_pct:.0f}% of the time")
    if share is not None and summary is not None:
        facts.append(
            f"the device spent {share:.0%} of the wall clock inside steps "
            f"(median device step {summary.step_time_median_s * 1e3:.1f} ms)"
        )
    facts.append(f"{f:.0%} of each step waits for data")
    evidence = "; ".join(facts)
    if (busy_pct is not None and busy_pct >= GPU_BUSY_PERCENT) or (
        busy_pct is None and share is not None and share >= DEVICE_BUSY
    ):
        return "gpu-bound", f"GPU-bound: the GPU is busy ({evidence})"
    if f >= PARTLY_INPUT_BOUND:
        return "partly input-bound", f"partly input-bound on the GPU ({evidence}); {INPUT_FIX}"
    return "host-bound", f"host-bound: the host cannot launch work fast enough ({evidence}); {HOST_FIX}"


def diagnose(
    input_bound_fraction: float,
    cpu_mean_percent: float | None,
    utilization: UtilizationSummary | None = None,
    summary: Summary | None = None,
) -> dict[str, Any]:
    """Verdict and message for :class:`suite.results.Diagnosis`.

    Args:
        input_bound_fraction: 0-1, from the summary.
        cpu_mean_percent: mean CPU utilization over cores during measurement (0-100), if sampled.
        utilization: the measurement windows' utilization and interference, and on a GPU
            NVML's readings (``utilization.gpu``); when a window was disturbed, the message
            ends with ``DISTURBED: ...`` (the sampler's sentence with its figures and fix)
            and ``disturbed`` is True. None: not judged.
        summary: the run's summary; on a GPU its device step times
            (``step_time_source == "device"``, ``device_busy_fraction``) are evidence for
            the limit. None: the verdict rests on the input-bound fraction and NVML.

    Returns:
        ``verdict`` (``input-bound``, ``partly input-bound``, ``compute-bound`` on the CPU,
        ``gpu-bound`` or ``host-bound`` on a GPU), ``message``, ``cpu_mean_percent``,
        ``disturbed``, ``gpu_util_percent`` (NVML, None without it) and
        ``device_busy_fraction`` (None without device step times).

    Raises:
        ValueError: the fraction is outside [0, 1].
    """
    f = input_bound_fraction
    if not 0.0 <= f <= 1.0:
        raise ValueError(f"input_bound_fraction must lie in [0, 1], got {f}")
    on_gpu = _gpu_verdict(f, summary, utilization)
    if f >= INPUT_BOUND:
        verdict = "input-bound"
        text = f"input-bound: {f:.0%} of each step waits for data; add loader workers or offload preprocessing"
        if on_gpu is not None:
            busy = utilization.gpu.util_mean_percent if utilization is not None and utilization.gpu else None
            seen = f" (GPU busy {busy:.0f}% of the time)" if busy is not None else ""
            text = f"input-bound: the input pipeline is the limit: {f:.0%} of each step waits for data{seen}"
            text += f"; {INPUT_FIX}"
    elif on_gpu is not None:
        verdict, text = on_gpu
    elif f >= PARTLY_INPUT_BOUND:
        verdict = "partly input-bound"
        text = f"partly input-bound: {f:.0%} of each step waits for data; more loader workers may help"
    else:
        verdict = "compute-bound"
        text = f"compute-bound: {f:.0%} of each step waits for data"
    if cpu_mean_percent is not None:
        text += f"; CPU {cpu_mean_percent:.0f}% busy during measurement"
    disturbed = None if utilization is None or not utilization.windows else utilization.disturbed
    if utilization is not None and utilization.disturbed:
        text += f". DISTURBED: {utilization.interference}"
    gpu = utilization.gpu if utilization is not None else None
    return {
        "verdict": verdict,
        "message": text,
        "cpu_mean_percent": cpu_mean_percent,
        "disturbed": disturbed,
        "gpu_util_percent": gpu.util_mean_percent if gpu is not None else None,
        "device_busy_fraction": summary.device_busy_fraction if summary is not None else None,
    }


def interval_advice(s: Summary, loader_batches: int | None = None) -> str | None:
    """Why the throughput's 95% CI is wider than :data:`DECISIVE_CI` (or unbounded) and what to change; None
    when it is within.

    The interval's half-width shrinks about as 1 / sqrt(measured time) once its batches are longer
    than the steps' correlation (batch means, :mod:`harness.intervals`), so reaching +-5% from +-h
    takes about (h / 5%)^2 times the measurement. An input-bound run is the usual cause: a loader
    of ``loader_batches`` batches in flight (DataLoader workers x prefetch) delivers them in bursts,
    so short windows differ by whole bursts; removing the bottleneck makes the steps even, and
    windows of :data:`LOADER_CYCLES` loader cycles over 5 repeats average the bursts out (the rule
    above overstates what such a run needs: its short batches are correlated).

    Args:
        s: the run's summary.
        loader_batches: batches the input pipeline holds in flight, when known.
    """
    rel = s.throughput_ci95_rel
    if rel is not None and rel <= DECISIVE_CI:
        return None
    f, cv = s.input_bound_fraction, s.step_time_cv
    width = "unbounded" if rel is None else f"±{rel:.0%}"
    if f >= PARTLY_INPUT_BOUND:
        why = f"the steps wait for data unevenly ({f:.0%} of each step waits; step-time CV {cv:.0%})"
        fix = (
            "remove the input bottleneck first (more num_workers, or input_pipeline=dali or tfdata-service): "
            "compute-bound steps vary little; or "
        )
    elif s.steady_state.status == "trending":
        why, fix = "the step times still trend (not steady)", "lengthen the warm-up (warmup_steps, warmup_seconds); "
    else:
        why, fix = f"the step times vary (step-time CV {cv:.0%})", "run on a quiet machine; "
    repeats = max(1, len(s.repeat_throughputs))
    if loader_batches and f >= PARTLY_INPUT_BOUND:
        fix += (
            f"measure windows of many loader cycles (the loader holds {loader_batches} batches in flight): "
            f"--set measure_steps={LOADER_CYCLES * loader_batches} --set repeats=5"
        )
    elif rel is not None:
        scale = (rel / DECISIVE_CI) ** 2
        per_window = math.ceil(s.measured_seconds * scale / repeats)
        fix += f"measure about {scale:.0f}x longer (--set measure_seconds={per_window}) or raise repeats to 5 or more"
    else:
        fix += "raise measure_steps and repeats (5 or more repeats give a t-interval over the repeats)"
    return f"not decisive ({width}, wider than ±{DECISIVE_CI:.0%}): {why}. Fix: {fix}"
