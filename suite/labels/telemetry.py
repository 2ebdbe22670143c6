"""Short words for what NVML saw on the run's GPUs and the energy the measurement took.

One home for the GPU and energy lines of the end-of-run table (``suite.run.summary``) and
the MLflow run page (``suite.tracking``). Every figure is read from the result's
:class:`harness.gpu_telemetry.GpuSummary` (``utilization_summary.gpu``), as written.
"""

from __future__ import annotations

from harness.gpu_telemetry import GpuSummary


def _mean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def gpu_readings_text(gpu: GpuSummary) -> str:
    """``"busy 97% (NVML utilization), 612 W mean, SM clock 1,980 MHz, 71.2 GiB used at most, 68 C at most;
    clock events: sw_power_cap 40% of readings"`` over the measurement windows (absent figures left out)."""
    ws = gpu.windows
    parts = []
    if gpu.util_mean_percent is not None:
        parts.append(f"busy {gpu.util_mean_percent:.0f}% (NVML utilization)")
    if gpu.power_mean_w is not None:
        parts.append(f"{gpu.power_mean_w:.0f} W mean")
    sm = _mean([w.sm_clock_mean_mhz for w in ws])
    if sm is not None:
        parts.append(f"SM clock {sm:,.0f} MHz")
    memory = max((w.memory_used_max_bytes for w in ws if w.memory_used_max_bytes is not None), default=None)
    if memory is not None:
        parts.append(f"{memory / 2**30:.1f} GiB used at most")
    temp = max((w.temperature_max_c for w in ws if w.temperature_max_c is not None), default=None)
    if temp is not None:
        parts.append(f"{temp:.0f} C at most")
    text = ", ".join(parts) or "no reading inside a measurement window"
    events = {k: v for k, v in gpu.clock_event_reasons.items() if k != "gpu_idle"}
    if events:
        text += "; clock events: " + ", ".join(f"{k} {v:.0%} of readings" for k, v in sorted(events.items()))
    count = len(gpu.gpus)
    return f"{count} GPU{'s' if count != 1 else ''}: {text}"


def energy_text(gpu: GpuSummary) -> str:
    """``"4.56 samples/J: 12,345 J over the measurement windows (NVML total-energy counter ...), GPU board
    energy only"``, or why there is no samples per joule."""
    if gpu.energy_j is None or gpu.samples_per_joule is None:
        return f"no samples per joule: {gpu.note or 'no energy was measured'}"
    return (
        f"{gpu.samples_per_joule:,.3g} samples/J: {gpu.energy_j:,.0f} J over the measurement windows "
        f"({gpu.energy_method}); the GPUs' board energy only, not the host's"
    )
