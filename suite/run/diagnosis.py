"""Input-bound diagnosis in plain words, for every run, with the interference the sampler saw.

input-bound fraction = data wait / (data wait + compute) over the measured steps:
the share of each step spent waiting for the input pipeline. A measurement window during
which other processes kept cores busy, or the hypervisor stole CPU time
(:mod:`harness.utilization`), makes the verdict say so: its throughput measures the
machine as shared, not the machine.
"""

from __future__ import annotations

from typing import Any

from harness.utilization import UtilizationSummary

INPUT_BOUND = 0.5
"""At or above this fraction the run is called input-bound."""
PARTLY_INPUT_BOUND = 0.1
"""At or above this fraction (and below INPUT_BOUND) the run is called partly input-bound."""


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
