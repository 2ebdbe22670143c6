"""How much CPU other processes took while a benchmark block ran (``make bench``)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def others_cores(block: Callable[[], T]) -> tuple[T, float]:
    """``(block(), cores other processes kept busy meanwhile)``: busy CPU-seconds outside this
    process's tree (:class:`harness.procstat.Reader`: /proc/stat against the tree's own time)
    over the block's wall-clock seconds; 0.0 where /proc cannot be read. Above
    :data:`harness.utilization.OTHERS_CORES_THRESHOLD` the block was disturbed."""
    from harness.procstat import Reader

    reader = Reader(os.getpid())
    reader.read()
    t0 = time.perf_counter()
    out = block()
    reading = reader.read()
    elapsed = time.perf_counter() - t0
    others_s = reading.get("others_s") if reading else None
    return out, (others_s / elapsed if isinstance(others_s, int | float) and elapsed > 0 else 0.0)
