"""The contract between the harness and a workload.

The harness owns the loop and the clock; a workload never times itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Workload(Protocol):
    """What the harness drives.

    Attributes:
        sync_each_step: if True the harness calls :meth:`synchronize` after every
            step so that ``compute_s`` covers the device work of that step (exact
            per-step split, one host-device sync per step). If False the harness
            synchronizes only at window edges: window throughput stays exact, but
            a step's compute time then covers only the host-side launch and queued
            device work shows up in the next step's data wait or compute.
    """

    sync_each_step: bool

    def batches(self) -> Iterator[Any]:
        """A fresh iterator of batches; the harness times each ``next()`` as data wait.

        It must not end before the plan is done (cycle a finite dataset).
        """
        ...

    def step(self, batch: Any) -> int:
        """One optimizer step on ``batch``; returns the number of samples it processed (> 0)."""
        ...

    def synchronize(self) -> None:
        """Wait for all queued device work (CUDA sync on GPU, no-op on CPU)."""
        ...
