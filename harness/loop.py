"""The measured loop: warm-up and measurement windows, repeated, with raw step records."""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.budget import Calibrator, Projection
from harness.records import Phase, StepRecord, WindowRecord
from harness.windows import RunPlan, Window
from harness.workload import Workload

Clock = Callable[[], float]
"""Monotonic clock in seconds (``time.perf_counter`` unless a test injects one)."""


class WorkloadError(RuntimeError):
    """The workload broke the harness contract (ended its batches early, bad sample count)."""


@dataclass
class Measurement:
    """Everything one rank measured: raw step records and window records.

    ``complete`` is False until every window of the plan has finished, so a run
    that was interrupted keeps what it measured but can never pass for a whole one.

    Attributes:
        steps: every step, in the order taken.
        windows: every finished window.
        complete: every window of the plan finished.
        run_uid: identity of this run, minted by the harness (uuid4 hex, 32 characters);
            pass a Measurement with the same ``run_uid`` to every rank of one run.
        origin_unix_s: wall-clock time (``time.time()``, seconds since the epoch) of the
            run's origin, the instant that every ``start_s`` is relative to; so
            ``origin_unix_s + start_s`` places a step in real time. Set by :func:`run_plan`.
        origin_monotonic_s: the same origin on the loop's monotonic clock.
        plan: the plan actually applied, JSON-ready: ``budget_s``, ``budget_floor_steps``,
            ``repeats``, ``calibrated`` (counts lowered to fit the budget),
            ``step_s_estimate``, ``estimate_steps``, ``projection`` (a
            :class:`harness.budget.Projection` dict or None) and ``windows``: one
            ``{"repeat", "phase", "min_steps", "min_seconds"}`` per finished window.
    """

    steps: list[StepRecord] = field(default_factory=list)
    windows: list[WindowRecord] = field(default_factory=list)
    complete: bool = False
    run_uid: str = field(default_factory=lambda: uuid.uuid4().hex)
    origin_unix_s: float | None = None
    origin_monotonic_s: float | None = None
    plan: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: the fields above, steps and windows as lists of dicts."""
        return {
            "run_uid": self.run_uid,
            "origin_unix_s": self.origin_unix_s,
            "origin_monotonic_s": self.origin_monotonic_s,
            "complete": self.complete,
            "plan": self.plan,
            "steps": [s.to_dict() for s in self.steps],
            "windows": [w.to_dict() for w in self.windows],
        }


def run_plan(
    workload: Workload,
    plan: RunPlan,
    measurement: Measurement | None = None,
    *,
    clock: Clock = time.perf_counter,
    origin: float | None = None,
    on_step: Callable[[StepRecord], None] | None = None,
    rank: int = 0,
    on_projection: Callable[[Projection], None] | None = None,
    wall_clock: Clock = time.time,
) -> Measurement:
    """Run ``plan`` on ``workload`` and record every step.

    Each repeat gets a fresh batch iterator. Within a window the harness times
    ``next(batches)`` as data wait and ``workload.step`` (plus a synchronize when
    ``workload.sync_each_step``) as compute. Each window opens and closes with
    ``workload.synchronize()`` so its wall-clock length covers all device work.
    After each step the loop asks ``workload.agree_done(done)``: a distributed workload
    all-reduces the flag, so every rank ends a window at the same step, when all ranks
    have met both minimums, and no rank waits forever in a collective.

    A workload whose ``device_timer()`` returns a :class:`harness.device_timer.DeviceTimer`
    gets a device marker recorded just before and just after each ``workload.step``; the
    window's step records receive their ``device_s`` after its closing synchronize (the
    ``on_step`` callback sees each record before that, with ``device_s`` None).

    With ``plan.budget_s`` the loop estimates the step time from repeat 0's first warm-up
    steps and lowers the counts so that the run fits (:class:`harness.budget.Calibrator`);
    the windows actually used are in ``measurement.plan``. Without a budget and without
    ``on_projection`` the windows run exactly as given.

    Args:
        workload: the workload to drive.
        plan: windows and repeats; checked first (raises ``WindowError``).
        measurement: an object to record into; pass one in to keep the partial
            records if the loop is interrupted (``complete`` stays False).
        clock: monotonic clock in seconds.
        origin: clock value that ``start_s`` fields are relative to (default: now).
        on_step: called after each step with its record (keep it cheap: it runs
            inside the measured window).
        rank: global rank recorded in every record (0 when not distributed).
        on_projection: called with a :class:`harness.budget.Projection` after the first
            warm-up step and again once the step time is calibrated (inside the warm-up).
        wall_clock: wall-clock time in seconds since the epoch, for ``origin_unix_s``.

    Returns:
        The measurement, with ``complete`` set to True.

    Raises:
        WindowError: the plan is invalid.
        WorkloadError: the batch iterator ended or a step reported no samples.
    """
    plan.check()
    out = measurement if measurement is not None else Measurement()
    now = clock()
    t_origin = now if origin is None else origin
    out.origin_monotonic_s = t_origin
    out.origin_unix_s = wall_clock() - (now - t_origin)
    applied: list[dict[str, Any]] = []
    calibrator = Calibrator(plan, on_projection) if plan.budget_s is not None or on_projection else None
    out.plan = {"repeats": plan.repeats, **Calibrator(plan, None).record(), "windows": applied}
    sync_each = bool(workload.sync_each_step)
    agree = workload.agree_done
    timer = workload.device_timer()
    later_warmup, measure = plan.warmup, plan.measurement
    for repeat in range(plan.repeats):
        batches = iter(workload.batches())
        for phase in (Phase.WARMUP, Phase.MEASUREMENT):
            window: Window = (plan.warmup if repeat == 0 else later_warmup) if phase is Phase.WARMUP else measure
            calibrating = calibrator is not None and repeat == 0 and phase is Phase.WARMUP
            steps = samples = 0
            first = len(out.steps)
            workload.synchronize()
            w_start = clock()
            while True:
                t0 = clock()
                try:
                    batch = next(batches)
                except StopIteration:
                    raise WorkloadError(
                        f"the batch iterator ended after {steps} {phase.value} steps of repeat "
                        f"{repeat}; a workload must yield batches until the harness stops"
                    ) from None
                t1 = clock()
                if timer is not None:
                    timer.step_started()
                n = workload.step(batch)
                if timer is not None:
                    timer.step_ended()
                if sync_each:
                    workload.synchronize()
                t2 = clock()
                if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
                    raise WorkloadError(f"workload.step returned {n!r}; it must return samples > 0")
                record = StepRecord(repeat, phase, steps, t0 - t_origin, t1 - t0, t2 - t1, n, rank)
                out.steps.append(record)
                steps += 1
                samples += n
                if on_step is not None:
                    on_step(record)
                done = window.is_done(steps, t2 - w_start)
                if calibrating and calibrator is not None:
                    chosen = calibrator.after_step(t2 - t0, t2 - t_origin, steps, done)
                    if chosen is not None:
                        window, later_warmup, measure = chosen
                        calibrating = False
                        out.plan.update(calibrator.record())  # kept if the run is interrupted later
                        done = window.is_done(steps, t2 - w_start)
                done = agree(done)
                if done:
                    break
            workload.synchronize()
            w_end = clock()
            if timer is not None:
                _attach_device_times(out.steps, first, timer.collect())
            out.windows.append(WindowRecord(repeat, phase, w_start - t_origin, w_end - w_start, steps, samples, rank))
            applied.append(
                {
                    "repeat": repeat,
                    "phase": phase.value,
                    "min_steps": window.min_steps,
                    "min_seconds": window.min_seconds,
                }
            )
    out.complete = True
    return out


def _attach_device_times(steps: list[StepRecord], first: int, device_s: list[float]) -> None:
    """Give ``steps[first:]`` (one window's records, in order) their device times, in place.

    Raises:
        WorkloadError: the timer returned a different number of times than the window has steps,
            or a time that is negative or not finite.
    """
    window = steps[first:]
    if len(device_s) != len(window):
        raise WorkloadError(f"the device timer returned {len(device_s)} step times for a window of {len(window)} steps")
    for i, (record, d) in enumerate(zip(window, device_s, strict=True)):
        if not 0.0 <= d < float("inf"):
            raise WorkloadError(f"the device timer returned {d!r} s for step {record.index}; it must be >= 0")
        steps[first + i] = dataclasses.replace(record, device_s=float(d))
