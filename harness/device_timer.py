"""Step times measured on the device, without a synchronize inside the window.

On a GPU the host launches a step's kernels and returns long before they run, so a step's
host time (``StepRecord.compute_s``) says how long the *launch* took: it is small while the
host runs ahead and large when the launch queue or the caching allocator makes it wait
(a host-timed quick run on an H100 showed a step-time CV of 26% where the repeats agreed
within 0.7%). A :class:`DeviceTimer` records a marker into the device's stream just before
and just after each step; the device timestamps each marker when it reaches it, so the
difference is the time the device spent on that step. The loop reads the times once per
window, after the window's closing synchronize (the markers have all been reached then),
so no step ever waits for the device.

The method is CUDA's own: ``cudaEventRecord`` around the work and ``cudaEventElapsedTime``
once both events have completed (CUDA C++ Programming Guide, "Events"; PyTorch exposes
them as ``torch.cuda.Event(enable_timing=True)``). The events' resolution is about half
a microsecond.

What a device step time covers: from the moment the device reaches the step's start
marker to the moment it finishes the step's last kernel. While the device is the limit,
the next step's work is already queued, so this is the step's pure device time. While the
host is the limit, the device waits inside the step for each kernel's launch, so the time
approaches the host's launch time; the device's idle share then shows in NVML's
utilization (:mod:`harness.gpu_telemetry`), not here.

This module imports torch only when a :class:`CudaEventTimer` is built, so the harness
stays importable (and CPU runs stay torch-free) without it.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


class DeviceTimerError(RuntimeError):
    """A device timer was used out of order (a step ended that never started, or times read twice)."""


@runtime_checkable
class DeviceTimer(Protocol):
    """Times each step on the device; the harness loop drives it (a workload only builds it).

    Call order per window: ``step_started()`` / ``step_ended()`` around every step, then,
    after the window's closing ``Workload.synchronize()``, one ``collect()``.

    Attributes:
        method: how the times are taken, in words (recorded in the result), e.g.
            ``"CUDA events around each step on cuda:0, read at the window edges"``.
    """

    method: str

    def step_started(self) -> None:
        """Record the start marker of the next step (asynchronously: it must not wait for the device)."""
        ...

    def step_ended(self) -> None:
        """Record the end marker of the step started last (asynchronously)."""
        ...

    def collect(self) -> list[float]:
        """Device seconds of each step recorded since the last ``collect``, in step order.

        Called only after the device finished all queued work (the window's closing
        synchronize), so reading the markers never waits.

        Raises:
            DeviceTimerError: a step started without ending.
        """
        ...


class CudaEventTimer:
    """A :class:`DeviceTimer` of CUDA events on the current stream of one device.

    Events are created once and reused window after window (a pool that grows to the
    longest window's step count), so a step costs two ``cudaEventRecord`` calls, a few
    microseconds of host time. Work the step queues on other streams is covered where it
    joins the current stream before the step ends (DDP's and Horovod's gradient
    all-reduce do, before the optimizer step).

    Args:
        device: the ``torch.device`` (or index) whose current stream is timed.

    Raises:
        RuntimeError: torch has no CUDA device (from torch, when the events are used).
    """

    def __init__(self, device: Any) -> None:
        import torch  # here, not at module level: the harness stays importable without torch

        self._torch: Any = torch
        self.device = torch.device(device)
        self.method = f"CUDA events around each step on {self.device}, read at the window edges"
        self._pool: list[tuple[Any, Any]] = []
        self._started = 0
        self._ended = 0

    def _pair(self, i: int) -> tuple[Any, Any]:
        while len(self._pool) <= i:
            event = self._torch.cuda.Event
            self._pool.append((event(enable_timing=True), event(enable_timing=True)))
        return self._pool[i]

    def step_started(self) -> None:
        """Record the start event of the next step on the device's current stream."""
        if self._started != self._ended:
            raise DeviceTimerError("a step started before the previous one ended")
        self._pair(self._started)[0].record(self._torch.cuda.current_stream(self.device))
        self._started += 1

    def step_ended(self) -> None:
        """Record the end event of the step started last."""
        if self._ended + 1 != self._started:
            raise DeviceTimerError("a step ended that never started")
        self._pool[self._ended][1].record(self._torch.cuda.current_stream(self.device))
        self._ended += 1

    def collect(self) -> list[float]:
        """Seconds between each step's two events (``Event.elapsed_time`` is in ms), then reset."""
        if self._started != self._ended:
            raise DeviceTimerError("collect() while a step is still open")
        out = [start.elapsed_time(end) / 1000.0 for start, end in self._pool[: self._ended]]
        self._started = self._ended = 0
        return out
