"""Input-bound diagnosis in plain words, for every run, with the interference the sampler saw, and
what an interval too wide to decide needs.

input-bound fraction = data wait / (data wait + compute) over the measured steps:
the share of each step spent waiting for the input pipeline. A measurement window during
which other processes kept cores busy, or the hypervisor stole CPU time
(:mod:`harness.utilization`), makes the verdict say so: its throughput measures the
machine as shared, not the machine.

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
DECISIVE_CI = 0.05
"""Relative half-width of the throughput's 95% CI above which a run cannot rank configurations (issue 34)."""
LOADER_CYCLES = 20
"""Loader cycles (batches in flight) a window of an input-bound run should span: its bursts then average out."""


def diagnose(
    input_bound_fraction: float, cpu_mean_percent: float | None, utilization: UtilizationSummary | None = None
) -> dict[str, Any]:
    """Verdict and message for :class:`suite.results.Diagnosis`.

    Args:
        input_bound_fraction: 0-1, from the summary.
        cpu_mean_percent: mean CPU utilization over cores during measurement (0-100), if sampled.
        utilization: the measurement windows' utilization and interference; when a window
            was disturbed, the message ends with ``DISTURBED: ...`` (the sampler's sentence
            with its figures and fix) and ``disturbed`` is True. None: not judged.

    Raises:
        ValueError: the fraction is outside [0, 1].
    """
    f = input_bound_fraction
    if not 0.0 <= f <= 1.0:
        raise ValueError(f"input_bound_fraction must lie in [0, 1], got {f}")
    if f >= INPUT_BOUND:
        verdict = "input-bound"
        text = f"input-bound: {f:.0%} of each step waits for data; add loader workers or offload preprocessing"
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
    return {"verdict": verdict, "message": text, "cpu_mean_percent": cpu_mean_percent, "disturbed": disturbed}


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
