"""The contract between the harness and a workload: every hook a workload may have, with its default.

The harness owns the loop and the clock; a workload never times itself. A workload class
subclasses :class:`Workload` and overrides what it needs; the harness, the rank
(``workloads.rank``) and the bench worker call the hooks directly, never look them up by
name, so a misspelt override is a type error (mypy) rather than a hook silently skipped.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol, runtime_checkable

from harness.device_timer import DeviceTimer


@runtime_checkable
class Workload(Protocol):
    """What the harness drives.

    Required: :meth:`batches` and :meth:`step`. Everything else has a default that is
    right for a single process on the CPU.

    Attributes:
        sync_each_step: if True the harness calls :meth:`synchronize` after every
            step so that ``compute_s`` covers the device work of that step (exact
            per-step split, one host-device sync per step). If False (the default) the
            harness synchronizes only at window edges: window throughput stays exact, but
            a step's compute time then covers only the host-side launch and queued
            device work shows up in the next step's data wait or compute.
    """

    sync_each_step: bool = False

    def batches(self) -> Iterator[Any]:
        """A fresh iterator of batches; the harness times each ``next()`` as data wait.

        It must not end before the plan is done (cycle a finite dataset).
        """
        ...

    def step(self, batch: Any) -> int:
        """One optimizer step on ``batch``; returns the number of samples it processed (> 0)."""
        ...

    def synchronize(self) -> None:
        """Wait for all queued device work (CUDA sync on GPU, a barrier across ranks); no-op by default."""
        return None

    def agree_done(self, local_done: bool) -> bool:
        """Whether every rank has met both minimums of the current window.

        A distributed workload all-reduces the flag (MIN), so every rank ends a window at the
        same step and none waits forever in a collective. Default: this rank's own flag.
        """
        return local_done

    def describe(self) -> dict[str, Any]:
        """What the workload says about itself, JSON-ready (model, batch sizes, precision, ...).

        It lands in the result's ``workload_info``. Default: nothing.
        """
        return {}

    def evaluate(self) -> dict[str, Any] | None:
        """An optional evaluation pass, run once after the last measurement window (outside every timed
        window); its record lands in ``workload_info["evaluation"]``. Default: None (no evaluation)."""
        return None

    def loss_trajectory(self) -> dict[str, Any] | None:
        """An optional loss-trajectory pass, run once after the last measurement window and the evaluation,
        outside every timed window: the seeded initial weights trained a few steps on a fixed seeded batch
        with :meth:`step`, to show a configuration trains the same model (``workloads/trajectory.py``).
        Its record lands in ``workload_info["loss_trajectory"]``. Default: None (no pass)."""
        return None

    def all_gather(self, obj: dict[str, Any]) -> list[dict[str, Any]]:
        """Every rank's ``obj``, in rank order, on every rank (over a CPU channel).

        Called only when the world size is above 1. Default: this process's own object, which
        the rank refuses for a world size above 1 ("gathered 1 ranks' records, expected N").
        """
        return [obj]

    def shutdown(self) -> None:
        """Leave the distributed job (destroy the process group, ``hvd.shutdown()``); default: nothing."""
        return None

    def device_timer(self) -> DeviceTimer | None:
        """A timer of each step on the device (:mod:`harness.device_timer`), or None (the default).

        With a timer the loop records every step's device time (``StepRecord.device_s``), read
        at the window's closing synchronize, and the step-time statistics, the steady-state
        test and the intervals use it; the host times stay in the records beside it. Called
        once per run, after the workload is built. Default: None, so step times are the
        host's (right on the CPU, where every operation is synchronous).
        """
        return None
