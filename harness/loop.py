"""The measured loop: warm-up and measurement windows, repeated, with raw step records."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from harness.records import Phase, StepRecord, WindowRecord
from harness.windows import RunPlan
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
    """

    steps: list[StepRecord] = field(default_factory=list)
    windows: list[WindowRecord] = field(default_factory=list)
    complete: bool = False


def run_plan(
    workload: Workload,
    plan: RunPlan,
    measurement: Measurement | None = None,
    *,
    clock: Clock = time.perf_counter,
    origin: float | None = None,
    on_step: Callable[[StepRecord], None] | None = None,
    rank: int = 0,
) -> Measurement:
    """Run ``plan`` on ``workload`` and record every step.

    Each repeat gets a fresh batch iterator. Within a window the harness times
    ``next(batches)`` as data wait and ``workload.step`` (plus a synchronize when
    ``workload.sync_each_step``) as compute. Each window opens and closes with
    ``workload.synchronize()`` so its wall-clock length covers all device work.
    A distributed workload may define ``agree_done(local_done) -> bool`` (e.g. an
    all-reduce of the flag): then every rank ends a window at the same step, when
    all ranks have met both minimums, so no rank waits forever in a collective.

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

    Returns:
        The measurement, with ``complete`` set to True.

    Raises:
        WindowError: the plan is invalid.
        WorkloadError: the batch iterator ended or a step reported no samples.
    """
    plan.check()
    out = measurement if measurement is not None else Measurement()
    t_origin = clock() if origin is None else origin
    sync_each = bool(workload.sync_each_step)
    agree: Callable[[bool], bool] | None = getattr(workload, "agree_done", None)
    for repeat in range(plan.repeats):
        batches = iter(workload.batches())
        for phase, window in ((Phase.WARMUP, plan.warmup), (Phase.MEASUREMENT, plan.measurement)):
            steps = samples = 0
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
                n = workload.step(batch)
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
                if agree is not None:
                    done = agree(done)
                if done:
                    break
            workload.synchronize()
            w_end = clock()
            out.windows.append(WindowRecord(repeat, phase, w_start - t_origin, w_end - w_start, steps, samples, rank))
    out.complete = True
    return out
