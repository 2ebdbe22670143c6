"""Background sampler of per-core CPU utilization and process-tree memory."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import psutil

from harness.records import Phase, WindowRecord


@dataclass(frozen=True)
class UtilizationSample:
    """One reading.

    Attributes:
        t_s: seconds since the run's origin (same time base as step records).
        cpu_percent: utilization of each logical core since the previous reading, 0-100.
        rss_bytes: resident memory of this process and all its children (DataLoader
            workers included), bytes.
    """

    t_s: float
    cpu_percent: list[float]
    rss_bytes: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def _tree_rss(proc: psutil.Process) -> int:
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return total


class UtilizationSampler:
    """Samples CPU utilization per core and process-tree RSS on a daemon thread.

    Use as a context manager around the measured loop. The thread sleeps between
    readings, so its cost is a few psutil calls per ``interval_s``.

    Args:
        interval_s: seconds between readings (> 0).
        clock: monotonic clock in seconds, the same one the loop uses.
        origin: clock value that ``t_s`` is relative to.
    """

    def __init__(
        self, interval_s: float = 0.5, clock: Callable[[], float] = time.perf_counter, origin: float = 0.0
    ) -> None:
        if interval_s <= 0:
            raise ValueError(f"interval_s must be > 0, got {interval_s}")
        self.interval_s = interval_s
        self.clock = clock
        self.origin = origin
        self.samples: list[UtilizationSample] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._proc = psutil.Process()

    def _run(self) -> None:
        psutil.cpu_percent(percpu=True)  # prime: the first call has no previous reading
        while not self._stop.wait(self.interval_s):
            self.samples.append(
                UtilizationSample(
                    t_s=self.clock() - self.origin,
                    cpu_percent=[float(v) for v in psutil.cpu_percent(percpu=True)],
                    rss_bytes=_tree_rss(self._proc),
                )
            )

    def start(self) -> UtilizationSampler:
        """Start the sampling thread."""
        self._thread = threading.Thread(target=self._run, name="trainbench-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> list[UtilizationSample]:
        """Stop the thread and return the readings."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5 * self.interval_s + 1)
        return self.samples

    def __enter__(self) -> UtilizationSampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass(frozen=True)
class UtilizationSummary:
    """CPU utilization and memory during the measurement windows.

    Attributes:
        samples: readings that fell inside a measurement window.
        cpu_mean_percent: mean over readings and cores, 0-100 (None without readings).
        cpu_per_core_mean_percent: mean per core, 0-100.
        rss_peak_bytes: largest process-tree RSS seen in the whole run (None without readings).
    """

    samples: int
    cpu_mean_percent: float | None
    cpu_per_core_mean_percent: list[float]
    rss_peak_bytes: int | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def summarize_utilization(samples: Sequence[UtilizationSample], windows: Sequence[WindowRecord]) -> UtilizationSummary:
    """Average the readings taken inside measurement windows.

    A reading at ``t_s`` covers the interval before it, so it counts when ``t_s``
    falls inside a measurement window.
    """
    spans = [(w.start_s, w.start_s + w.seconds) for w in windows if w.phase is Phase.MEASUREMENT]
    inside = [s for s in samples if any(a < s.t_s <= b for a, b in spans)]
    peak = max((s.rss_bytes for s in samples), default=None)
    if not inside:
        return UtilizationSummary(0, None, [], peak)
    cores = len(inside[0].cpu_percent)
    per_core = [sum(s.cpu_percent[i] for s in inside) / len(inside) for i in range(cores)]
    return UtilizationSummary(
        samples=len(inside),
        cpu_mean_percent=sum(per_core) / cores if cores else None,
        cpu_per_core_mean_percent=per_core,
        rss_peak_bytes=peak,
    )
