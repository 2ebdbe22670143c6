"""What NVML said about the run's GPUs during each measurement window, and the energy it took.

The sampler process (:mod:`harness.procstat`, :mod:`harness.nvml`) reads every GPU the run
uses at each interval: NVML's utilization, memory used, power, clocks, temperature,
clock-event ("throttle") reasons and the total-energy counter. This module turns those
raw readings into per-window figures and **samples per joule**.

Energy of a measurement window (all sampled GPUs together):

- NVML's total-energy counter (``nvmlDeviceGetTotalEnergyConsumption``, millijoules since
  the driver loaded; Volta and newer), read at each interval and interpolated linearly to
  the window's two edges: energy = counter(end) - counter(start). The counter integrates
  power on the board, so only the few milliseconds at each edge are interpolated;
- else the integral of the power readings (``nvmlDeviceGetPowerUsage``), by the trapezoid
  rule, interpolated to the edges the same way.

A window is given an energy only when readings bracket it (one at or before its start, one
at or after its end); the sampler takes a last reading when it stops, so the last window is
bracketed. Samples per joule = the measured samples / the measured windows' energy; it is
given only when every measurement window has an energy and one GPU was sampled per rank.
It counts the GPUs' board energy only: not the host's CPUs, memory, fans or cooling, as
NVML cannot see them (MLPerf Power measures at the wall; this is the accelerator's share).

Every figure here is recomputed from the raw readings, so a validator can check it.
Work is linear in the readings plus a sort.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from harness.records import Phase, WindowRecord

CLOCK_EVENT_REASONS: dict[int, str] = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
"""NVML's clock-event (throttle) reason bits, from ``nvml.h`` (``nvmlClocksEventReason*``)."""

COUNTER = "NVML total-energy counter, interpolated to the window edges"
INTEGRAL = "integral of NVML power readings (trapezoid rule), interpolated to the window edges"


@dataclass(frozen=True)
class GpuReading:
    """One GPU at one instant, as NVML reported it (None where NVML does not support a field).

    Attributes:
        t_s: seconds since the run's origin (the same time base as step records).
        uuid: the GPU's UUID (``GPU-...``).
        index: NVML's index of the GPU on its host.
        util_percent: NVML's GPU utilization (``nvmlDeviceGetUtilizationRates().gpu``): the
            share of the last sample period (1/6 s to 1 s by product) during which one or
            more kernels ran on the GPU, 0-100; what ``nvidia-smi`` calls GPU-Util, the
            stand-in for SM utilisation that every NVIDIA GPU reports.
        memory_used_bytes: device memory in use (all processes).
        power_w: board power draw, watts (on Ampere and newer, averaged over about 1 s).
        energy_j: the total-energy counter, joules since the driver loaded.
        sm_clock_mhz: current SM clock.
        memory_clock_mhz: current memory clock.
        temperature_c: GPU die temperature, degrees Celsius.
        clock_event_reasons: NVML's clock-event reason bitmask (:data:`CLOCK_EVENT_REASONS`).
    """

    t_s: float
    uuid: str
    index: int
    util_percent: float | None = None
    memory_used_bytes: int | None = None
    power_w: float | None = None
    energy_j: float | None = None
    sm_clock_mhz: float | None = None
    memory_clock_mhz: float | None = None
    temperature_c: float | None = None
    clock_event_reasons: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


@dataclass(frozen=True)
class GpuWindow:
    """The sampled GPUs during one measurement window (all ranks of one repeat together).

    Attributes:
        repeat: 0-based repeat index.
        readings: GPU readings inside the window (one per GPU per interval).
        util_mean_percent: mean GPU utilization over the readings, 0-100.
        memory_used_max_bytes: the most device memory in use on any sampled GPU.
        power_mean_w: mean power per GPU, watts.
        power_max_w: highest power reading, watts.
        sm_clock_mean_mhz: mean SM clock.
        memory_clock_mean_mhz: mean memory clock.
        temperature_max_c: highest temperature.
        clock_event_reasons: reason name -> share of readings during which it was active (0-1),
            only reasons that were active at least once.
        energy_j: energy of all sampled GPUs over the window, joules (None: not bracketed).
        samples: samples the window processed (all ranks).
        samples_per_joule: ``samples / energy_j`` (None without an energy).
    """

    repeat: int
    readings: int
    util_mean_percent: float | None
    memory_used_max_bytes: int | None
    power_mean_w: float | None
    power_max_w: float | None
    sm_clock_mean_mhz: float | None
    memory_clock_mean_mhz: float | None
    temperature_max_c: float | None
    clock_event_reasons: dict[str, float]
    energy_j: float | None
    samples: int
    samples_per_joule: float | None


@dataclass(frozen=True)
class GpuSummary:
    """GPU telemetry over the measurement windows and the energy they took.

    Attributes:
        gpus: UUIDs of the sampled GPUs.
        windows: one :class:`GpuWindow` per measurement window (repeat).
        util_mean_percent: mean GPU utilization over every window's readings (0-100).
        power_mean_w: mean power per GPU over them, watts.
        energy_j: energy of the sampled GPUs over all measurement windows, joules (None
            when a window has none).
        energy_method: :data:`COUNTER` or :data:`INTEGRAL` (None without an energy).
        samples_per_joule: measured samples / ``energy_j`` (None: see ``note``).
        note: why there is no samples per joule, or None.
        clock_event_reasons: as in :class:`GpuWindow`, over every window's readings.
    """

    gpus: list[str]
    windows: list[GpuWindow]
    util_mean_percent: float | None
    power_mean_w: float | None
    energy_j: float | None
    energy_method: str | None
    samples_per_joule: float | None
    note: str | None = None
    clock_event_reasons: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def _mean(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _max(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def reasons_share(readings: Sequence[GpuReading]) -> dict[str, float]:
    """Reason name -> share of the readings (with a bitmask) during which that reason was active."""
    masks = [r.clock_event_reasons for r in readings if r.clock_event_reasons is not None]
    out: dict[str, float] = {}
    for bit, name in CLOCK_EVENT_REASONS.items():
        active = sum(1 for m in masks if m & bit)
        if active:
            out[name] = active / len(masks)
    return out


def cumulative_energy(readings: Sequence[GpuReading]) -> tuple[list[float], list[float], str] | None:
    """(times, cumulative joules, method) of one GPU's readings in time order; None with under 2 points.

    The counter when every reading has it, else the trapezoid integral of power.
    """
    rs = sorted(readings, key=lambda r: r.t_s)
    if len(rs) >= 2 and all(r.energy_j is not None for r in rs):
        return [r.t_s for r in rs], [float(r.energy_j or 0.0) for r in rs], COUNTER
    powered = [r for r in rs if r.power_w is not None]
    if len(powered) < 2:
        return None
    joules = [0.0]
    for a, b in itertools.pairwise(powered):
        joules.append(joules[-1] + (b.t_s - a.t_s) * (float(a.power_w or 0.0) + float(b.power_w or 0.0)) / 2)
    return [r.t_s for r in powered], joules, INTEGRAL


def at(times: Sequence[float], values: Sequence[float], t: float) -> float | None:
    """``values`` interpolated linearly at ``t``; None outside ``[times[0], times[-1]]``."""
    if not times or t < times[0] or t > times[-1]:
        return None
    i = bisect.bisect_left(times, t)
    if times[i] == t:
        return values[i]
    t0, t1, v0, v1 = times[i - 1], times[i], values[i - 1], values[i]
    return v0 + (v1 - v0) * (t - t0) / (t1 - t0)


def _spans(windows: Sequence[WindowRecord]) -> list[tuple[int, float, float, int]]:
    """(repeat, start, end, samples) of each repeat's measurement windows, ranks merged."""
    spans: dict[int, tuple[float, float, int]] = {}
    for w in windows:
        if w.phase is Phase.MEASUREMENT:
            a, b, n = spans.get(w.repeat, (w.start_s, w.start_s + w.seconds, 0))
            spans[w.repeat] = (min(a, w.start_s), max(b, w.start_s + w.seconds), n + w.samples)
    return sorted((r, a, b, n) for r, (a, b, n) in spans.items())


def summarize_gpu(readings: Sequence[GpuReading], windows: Sequence[WindowRecord]) -> GpuSummary | None:
    """Per-window GPU figures, the measured energy and samples per joule; None without GPU readings.

    A reading counts for a window when its time falls inside it (start excluded, end
    included), as the CPU readings do (:func:`harness.utilization.summarize_utilization`).
    """
    if not readings:
        return None
    by_gpu: dict[str, list[GpuReading]] = {}
    for r in readings:
        by_gpu.setdefault(r.uuid, []).append(r)
    curves = {u: cumulative_energy(rs) for u, rs in by_gpu.items()}
    methods = {c[2] for c in curves.values() if c is not None}
    ordered = sorted(readings, key=lambda r: r.t_s)
    times = [r.t_s for r in ordered]
    judged: list[GpuWindow] = []
    inside_all: list[GpuReading] = []
    for repeat, a, b, samples in _spans(windows):
        inside = ordered[bisect.bisect_right(times, a) : bisect.bisect_right(times, b)]
        inside_all += inside
        parts = [None if c is None else _delta(c, a, b) for c in curves.values()]
        energy = sum(p for p in parts if p is not None) if parts and None not in parts else None
        judged.append(
            GpuWindow(
                repeat=repeat,
                readings=len(inside),
                util_mean_percent=_mean([r.util_percent for r in inside]),
                memory_used_max_bytes=max(
                    (r.memory_used_bytes for r in inside if r.memory_used_bytes is not None), default=None
                ),
                power_mean_w=_mean([r.power_w for r in inside]),
                power_max_w=_max([r.power_w for r in inside]),
                sm_clock_mean_mhz=_mean([r.sm_clock_mhz for r in inside]),
                memory_clock_mean_mhz=_mean([r.memory_clock_mhz for r in inside]),
                temperature_max_c=_max([r.temperature_c for r in inside]),
                clock_event_reasons=reasons_share(inside),
                energy_j=energy,
                samples=samples,
                samples_per_joule=samples / energy if energy else None,
            )
        )
    ranks = len({w.rank for w in windows if w.phase is Phase.MEASUREMENT})
    energies = [w.energy_j for w in judged]
    total = sum(e for e in energies if e is not None) if judged and None not in energies else None
    note = None
    if not judged:
        note = "no measurement window"
    elif total is None:
        note = "a measurement window has no GPU energy: no readings bracket it"
    elif len(by_gpu) < ranks:
        note = f"energy of {len(by_gpu)} GPU(s) for {ranks} ranks: samples per joule needs every rank's GPU"
    elif len(methods) > 1:
        note = "the GPUs' energies come from different methods"
    per_joule = sum(w.samples for w in judged) / total if note is None and total else None
    return GpuSummary(
        gpus=sorted(by_gpu),
        windows=judged,
        util_mean_percent=_mean([r.util_percent for r in inside_all]),
        power_mean_w=_mean([r.power_w for r in inside_all]),
        energy_j=total,
        energy_method=methods.pop() if total is not None and len(methods) == 1 else None,
        samples_per_joule=per_joule,
        note=note,
        clock_event_reasons=reasons_share(inside_all),
    )


def _delta(curve: tuple[list[float], list[float], str], a: float, b: float) -> float | None:
    """Joules of one GPU between ``a`` and ``b`` from its cumulative curve; None when not bracketed."""
    times, joules, _ = curve
    start, end = at(times, joules, a), at(times, joules, b)
    return None if start is None or end is None else end - start
