"""How much CPU a benchmark block got, and how much other processes took meanwhile (``make bench``)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def block_cores(block: Callable[[], T]) -> tuple[T, float, float]:
    """``(block(), others' cores, own cores)`` over the block's wall-clock seconds.

    Others': busy CPU-seconds outside this process's tree (:class:`harness.procstat.Reader`:
    /proc/stat against the tree's own time), 0.0 where /proc cannot be read; above
    :data:`harness.utilization.OTHERS_CORES_THRESHOLD` the block was disturbed. Own: this
    process's CPU time (all its threads), so below the job's threads it was kept off its CPUs.
    """
    from harness.procstat import Reader

    reader = Reader(os.getpid())
    reader.read()
    cpu0, t0 = time.process_time(), time.perf_counter()
    out = block()
    reading = reader.read()
    own_s, elapsed = time.process_time() - cpu0, time.perf_counter() - t0
    others_s = reading.get("others_s") if reading else None
    if elapsed <= 0:
        return out, 0.0, 0.0
    return out, (others_s / elapsed if isinstance(others_s, int | float) else 0.0), own_s / elapsed


def others_cores(block: Callable[[], T]) -> tuple[T, float]:
    """``(block(), cores other processes kept busy meanwhile)``: :func:`block_cores` without
    this process's own share."""
    out, others, _ = block_cores(block)
    return out, others
