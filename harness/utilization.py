"""Utilization and interference during the measurement windows, from the sampler's readings.

A measurement window is *disturbed* when, over the readings taken inside it, processes
outside the run's tree kept at least :data:`OTHERS_CORES_THRESHOLD` (0.2) cores busy on
average, or the hypervisor stole at least :data:`STEAL_THRESHOLD` (10%) of the machine's CPU
time. The anchor is pyperf: it warns that "the benchmark result may be unstable" once the
standard deviation reaches 10% of the mean (``pyperf check``), and ``pyperf system`` advises
isolating the benchmark's CPUs from other processes. A training step runs one thread per core
and waits for the slowest at every synchronization, so interference is measured in cores, not
as a share of a big machine: a foreign task busy 0.2 of the time on a core it shares with one
of the run's threads takes about half of that, 10% of the thread's time, and the whole step
waits for that thread. On a 2-vCPU machine 0.2 cores is 10% of the machine; on 16 cores one
busy process (1 core, 6% of the machine) still disturbs. Both figures are machine-wide, as
/proc/stat counts them, so a run bound to some of the cores is judged conservatively.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from harness.gpu_telemetry import GpuReading, GpuSummary, summarize_gpu
from harness.records import Phase, WindowRecord

OTHERS_CORES_THRESHOLD = 0.2
"""Cores kept busy, on average, outside the run's tree that disturb a window."""

STEAL_THRESHOLD = 0.10
"""Share of the machine's CPU time stolen by the hypervisor that disturbs a window."""


@dataclass(frozen=True)
class WindowInterference:
    """Interference during one measurement window (all ranks of one repeat together).

    Attributes:
        repeat: 0-based repeat index.
        readings: sampler readings inside the window (0: nothing can be said).
        others_cpu_fraction: CPU-seconds used outside the run's tree / CPU-seconds the
            machine offered (all cores), 0-1; None without readings.
        steal_fraction: CPU-seconds stolen / CPU-seconds offered, 0-1; None without readings.
        disturbed: others kept ``OTHERS_CORES_THRESHOLD`` cores busy or steal reached
            ``STEAL_THRESHOLD``.
        others_cores: cores kept busy outside the run's tree on average
            (``others_cpu_fraction`` x cores); None without readings.
    """

    repeat: int
    readings: int
    others_cpu_fraction: float | None
    steal_fraction: float | None
    disturbed: bool
    others_cores: float | None = None


@dataclass(frozen=True)
class UtilizationSummary:
    """CPU utilization, memory and interference during the measurement windows.

    Attributes:
        samples: readings that fell inside a measurement window.
        cpu_mean_percent: mean over readings and cores, 0-100 (None without readings).
        cpu_per_core_mean_percent: mean per core, 0-100.
        rss_peak_bytes: largest process-tree RSS seen in the whole run (None without readings).
        others_cpu_fraction: over all measurement windows, as in :class:`WindowInterference`
            (None without interference readings, e.g. in older results).
        steal_fraction: likewise for steal.
        others_cores: likewise, in cores.
        windows: one :class:`WindowInterference` per measurement window (repeat).
        disturbed_windows: how many windows were disturbed.
        disturbed: at least one window was disturbed (the result, verdict and validator flag it).
        interference: one sentence with the figures and the fix when disturbed, else None.
        others_cores_threshold: the threshold used for others' CPU, in cores.
        steal_threshold: the threshold used for steal, a share of the machine's CPU time.
        gpu: NVML's view of the run's GPUs per measurement window, their energy and samples
            per joule (:mod:`harness.gpu_telemetry`); None without GPU readings (a CPU run).
        gpu_error: why the run's GPUs could not be read, or not all of them (e.g. "NVML unavailable:
            ..."), or None.
    """

    samples: int
    cpu_mean_percent: float | None
    cpu_per_core_mean_percent: list[float]
    rss_peak_bytes: int | None
    others_cpu_fraction: float | None = None
    steal_fraction: float | None = None
    others_cores: float | None = None
    windows: list[WindowInterference] = field(default_factory=list)
    disturbed_windows: int = 0
    disturbed: bool = False
    interference: str | None = None
    others_cores_threshold: float = OTHERS_CORES_THRESHOLD
    steal_threshold: float = STEAL_THRESHOLD
    gpu: GpuSummary | None = None
    gpu_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


@dataclass(frozen=True)
class UtilizationSample:
    """One reading, covering the interval since the previous one.

    Attributes:
        t_s: seconds since the run's origin (same time base as step records).
        cpu_percent: utilization of each logical core over the interval, 0-100 (steal counts as busy).
        rss_bytes: resident memory of the run's process tree (DataLoader workers included), bytes.
        machine_cpu_s: CPU-seconds the machine offered in the interval (all cores; idle and steal included).
        run_cpu_s: CPU-seconds used by the run's process tree.
        others_cpu_s: busy CPU-seconds outside the run's tree (other jobs: interference).
        steal_s: CPU-seconds the hypervisor gave to other guests.
        gpus: one NVML reading per GPU of the run, taken with this reading (None: no GPU sampled).
        gpu_error: on the first reading after the sampler failed to open NVML (or to find a GPU it
            was given), why; else None.

    The four after ``rss_bytes`` are None in results written before interference sampling.
    """

    t_s: float
    cpu_percent: list[float]
    rss_bytes: int
    machine_cpu_s: float | None = None
    run_cpu_s: float | None = None
    others_cpu_s: float | None = None
    steal_s: float | None = None
    gpus: list[GpuReading] | None = None
    gpu_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def measurement_spans(windows: Sequence[WindowRecord]) -> list[tuple[float, float, int]]:
    """(start, end, repeat) of each repeat's measurement window, all ranks merged, sorted by start."""
    spans: dict[int, tuple[float, float]] = {}
    for w in windows:
        if w.phase is Phase.MEASUREMENT:
            a, b = spans.get(w.repeat, (w.start_s, w.start_s + w.seconds))
            spans[w.repeat] = (min(a, w.start_s), max(b, w.start_s + w.seconds))
    return sorted((a, b, r) for r, (a, b) in spans.items())


def _fraction(part: float, whole: float) -> float | None:
    return part / whole if whole > 0 else None


def _window(repeat: int, readings: list[UtilizationSample]) -> WindowInterference:
    known = [s for s in readings if s.machine_cpu_s is not None]
    machine = sum(s.machine_cpu_s or 0.0 for s in known)
    wall = sum((s.machine_cpu_s or 0.0) / len(s.cpu_percent) for s in known if s.cpu_percent)
    others_s = sum(s.others_cpu_s or 0.0 for s in known)
    others, cores = _fraction(others_s, machine), _fraction(others_s, wall)
    steal = _fraction(sum(s.steal_s or 0.0 for s in known), machine)
    disturbed = (cores is not None and cores >= OTHERS_CORES_THRESHOLD) or (
        steal is not None and steal >= STEAL_THRESHOLD
    )
    return WindowInterference(repeat, len(known), others, steal, disturbed, cores)


def summarize_utilization(samples: Sequence[UtilizationSample], windows: Sequence[WindowRecord]) -> UtilizationSummary:
    """Average the readings taken inside measurement windows and judge interference.

    A reading at ``t_s`` covers the interval before it, so it counts for a window when
    ``t_s`` falls inside it (start excluded, end included). O((readings + windows) log windows).
    """
    spans = measurement_spans(windows)
    starts = [a for a, _, _ in spans]
    per_window: dict[int, list[UtilizationSample]] = {r: [] for _, _, r in spans}
    inside: list[UtilizationSample] = []
    for s in samples:
        i = bisect.bisect_left(starts, s.t_s) - 1  # the last window starting strictly before t_s
        if i >= 0 and s.t_s <= spans[i][1]:
            inside.append(s)
            per_window[spans[i][2]].append(s)
    peak = max((s.rss_bytes for s in samples), default=None)
    gpu = summarize_gpu([g for s in samples for g in s.gpus or ()], windows)
    gpu_error = next((s.gpu_error for s in samples if s.gpu_error), None)
    if not inside:
        return UtilizationSummary(0, None, [], peak, gpu=gpu, gpu_error=gpu_error)
    cores = len(inside[0].cpu_percent)
    per_core = [sum(s.cpu_percent[i] for s in inside) / len(inside) for i in range(cores)]
    judged = [_window(r, per_window[r]) for _, _, r in spans]
    overall = _window(-1, inside)
    bad = [w for w in judged if w.disturbed]
    note = None
    if bad:
        worst_cores = max(w.others_cores or 0.0 for w in bad)
        worst_steal = max(w.steal_fraction or 0.0 for w in bad)
        causes = []
        if worst_cores >= OTHERS_CORES_THRESHOLD:
            causes.append(
                f"other processes kept up to {worst_cores:.2f} cores busy (threshold {OTHERS_CORES_THRESHOLD})"
            )
        if worst_steal >= STEAL_THRESHOLD:
            causes.append(
                f"the hypervisor stole up to {worst_steal:.0%} of the CPU time (threshold {STEAL_THRESHOLD:.0%})"
            )
        note = (
            f"{len(bad)} of {len(judged)} measurement windows were disturbed: {' and '.join(causes)}. "
            "Fix: re-run when nothing else runs on the machine, or on dedicated CPUs"
        )
    return UtilizationSummary(
        samples=len(inside),
        cpu_mean_percent=sum(per_core) / cores if cores else None,
        cpu_per_core_mean_percent=per_core,
        rss_peak_bytes=peak,
        others_cpu_fraction=overall.others_cpu_fraction,
        steal_fraction=overall.steal_fraction,
        others_cores=overall.others_cores,
        windows=judged,
        disturbed_windows=len(bad),
        disturbed=bool(bad),
        interference=note,
        gpu=gpu,
        gpu_error=gpu_error,
    )
