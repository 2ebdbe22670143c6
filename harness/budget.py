"""A time budget for a run plan: project the run from the measured step time and fit it.

After the first warm-up steps the harness knows what a step costs. The first step carries
lazy initialization and compilation, so the estimate is the median of the next
:data:`CALIBRATION_STEPS` warm-up steps (the first only when the warm-up has no others).
pytest-benchmark's ``max_time`` and asv's calibration of repeats from a measured sample are
the anchors. With a budget, :func:`calibrate` lowers the measurement window's ``min_steps``
(never below the floor that still gives a usable 95% interval) and, when that is not enough,
the remaining warm-up, so the projected run fits; it never raises a count above the plan.
The projection is reported either way, so a run that cannot fit says so early, with figures.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from harness.windows import RunPlan, Window

CALIBRATION_STEPS = 2
"""Warm-up steps after the first that estimate the step time."""


def steps_needed(window: Window, step_s: float) -> int:
    """Steps a window will take at ``step_s`` seconds per step: both minimums met."""
    if step_s <= 0 or window.min_seconds <= 0:
        return window.min_steps
    return max(window.min_steps, math.ceil(window.min_seconds / step_s))


@dataclass(frozen=True)
class Projection:
    """How long the whole run will take, as projected from the step time.

    Attributes:
        stage: ``"first_step"`` (after the first warm-up step, from its time, which includes
            lazy init and compilation) or ``"calibrated"`` (from the next warm-up steps).
        step_s: estimated seconds per step.
        first_step_s: the first warm-up step's seconds.
        elapsed_s: seconds from the run's origin to now.
        projected_total_s: ``elapsed_s`` plus the projected rest of the run, seconds.
        budget_s: the plan's budget, seconds, or None.
        repeats: repeats of the plan.
        warmup_steps: warm-up steps per repeat (repeat 0 first) the run is projected to take.
        measure_steps: measured steps per window.
        floor_steps: measured steps in all windows that the budget may not cut below.
        over_budget_s: ``projected_total_s - budget_s`` when positive, else 0.
        floor_overshoots: even the floor does not fit the budget.
        floor_total_s: the projected total at the floor (measurement windows at the floor,
            later warm-ups of 1 step, repeat 0's warm-up ending now), seconds; the shortest
            this run can be, so ``floor_total_s - budget_s`` is by how much the floor overshoots.
    """

    stage: str
    step_s: float
    first_step_s: float
    elapsed_s: float
    projected_total_s: float
    budget_s: float | None
    repeats: int
    warmup_steps: list[int]
    measure_steps: int
    floor_steps: int
    over_budget_s: float
    floor_overshoots: bool
    floor_total_s: float

    def explain(self) -> str:
        """One sentence with the figures; the caller adds the cause and the fix it knows."""
        steps = f"{self.repeats} x ({self.warmup_steps[-1]} warm-up + {self.measure_steps} measured) steps"
        text = f"projected {self.projected_total_s / 60:.1f} min: a step takes {self.step_s:.2f} s, {steps}"
        if self.budget_s is not None and self.over_budget_s > 0:
            floor = " even at the floor of measured steps" if self.floor_overshoots else ""
            text += f"; over the {self.budget_s / 60:.1f} min budget by {self.over_budget_s:.0f} s{floor}"
        return text

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


@dataclass(frozen=True)
class Calibration:
    """Windows chosen for the rest of the run.

    Attributes:
        current_warmup: the warm-up window of repeat 0, now running.
        warmup: the warm-up window of every later repeat.
        measurement: the measurement window of every repeat.
        changed: the counts were lowered to fit the budget.
        projection: the projection with these windows.
    """

    current_warmup: Window
    warmup: Window
    measurement: Window
    changed: bool
    projection: Projection


def project(
    plan: RunPlan,
    stage: str,
    step_s: float,
    first_step_s: float,
    elapsed_s: float,
    warmup_done: int,
    windows: tuple[Window, Window, Window] | None = None,
) -> Projection:
    """Project the run at ``step_s`` from now, repeat 0's warm-up having taken ``warmup_done`` steps.

    ``windows`` are (current warm-up, later warm-ups, measurement); default: the plan's.
    """
    cur, warm, meas = windows or (plan.warmup, plan.warmup, plan.measurement)
    r = plan.repeats
    w0 = max(warmup_done, steps_needed(cur, step_s))
    w, m = steps_needed(warm, step_s), steps_needed(meas, step_s)
    total = elapsed_s + step_s * ((w0 - warmup_done) + r * m + (r - 1) * w)
    budget = plan.budget_s
    over = max(0.0, total - budget) if budget is not None else 0.0
    floor_m = floor_per_window(plan)
    at_floor = elapsed_s + step_s * (r * min(floor_m, steps_needed(plan.measurement, step_s)) + (r - 1))
    return Projection(
        stage=stage,
        step_s=step_s,
        first_step_s=first_step_s,
        elapsed_s=elapsed_s,
        projected_total_s=total,
        budget_s=budget,
        repeats=r,
        warmup_steps=[w0] + [w] * (r - 1),
        measure_steps=m,
        floor_steps=plan.budget_floor_steps,
        over_budget_s=over,
        floor_overshoots=budget is not None and at_floor > budget,
        floor_total_s=at_floor,
    )


def floor_per_window(plan: RunPlan) -> int:
    """Measured steps per window that the budget may not cut below: the floor spread over the repeats."""
    return max(2, math.ceil(plan.budget_floor_steps / plan.repeats))


def calibrate(plan: RunPlan, step_s: float, first_step_s: float, elapsed_s: float, warmup_done: int) -> Calibration:
    """Choose the windows of the rest of the run so that it fits ``plan.budget_s``.

    Without a budget, or when the plan fits, the plan's windows are kept. Otherwise, in
    order, until the projection fits: the measurement window's steps are lowered (not below
    :func:`floor_per_window`), then the later repeats' warm-up (not below 1 step), then
    repeat 0's warm-up ends now. Lowered windows have ``min_seconds`` 0: their step counts
    already account for the time minimums at ``step_s``.
    """
    keep = (plan.warmup, plan.warmup, plan.measurement)
    fits = project(plan, "calibrated", step_s, first_step_s, elapsed_s, warmup_done, keep)
    if plan.budget_s is None or fits.over_budget_s == 0.0:
        return Calibration(plan.warmup, plan.warmup, plan.measurement, False, fits)
    r = plan.repeats
    afford = (plan.budget_s - elapsed_s) / step_s  # steps that fit in the rest of the budget
    w0_left = max(0, steps_needed(plan.warmup, step_s) - warmup_done)
    w = steps_needed(plan.warmup, step_s)
    m_plan = steps_needed(plan.measurement, step_s)
    floor_m = min(floor_per_window(plan), m_plan)
    m = min(m_plan, max(floor_m, math.floor((afford - w0_left - (r - 1) * w) / r)))
    if w0_left + r * m + (r - 1) * w > afford and r > 1:
        w = min(w, max(1, math.floor((afford - w0_left - r * m) / (r - 1))))
    if w0_left + r * m + (r - 1) * w > afford:
        w0_left = 0
    windows = (Window(warmup_done + w0_left, 0.0), Window(w, 0.0), Window(m, 0.0))
    return Calibration(
        *windows, True, project(plan, "calibrated", step_s, first_step_s, elapsed_s, warmup_done, windows)
    )


class Calibrator:
    """Feeds :func:`calibrate` from repeat 0's warm-up steps, as the loop takes them.

    Args:
        plan: the run plan (with or without a budget).
        on_projection: called with the projection after the first warm-up step and after
            calibration (it runs inside the warm-up window; keep it cheap).
    """

    def __init__(self, plan: RunPlan, on_projection: Callable[[Projection], None] | None) -> None:
        self.plan = plan
        self.on_projection = on_projection
        self.first_step_s: float | None = None
        self.times: list[float] = []
        self.result: Calibration | None = None

    def after_step(
        self, step_s: float, elapsed_s: float, steps_done: int, window_done: bool
    ) -> tuple[Window, Window, Window] | None:
        """Record one warm-up step of repeat 0; once calibrated, the windows to use from now on.

        Returns (repeat 0's warm-up, later warm-ups, measurement) at the step that calibrates
        (the ``1 + CALIBRATION_STEPS``-th, or the last of a shorter warm-up), else None.
        """
        if self.result is not None:
            return None
        if self.first_step_s is None:
            self.first_step_s = step_s
            if self.on_projection is not None:
                self.on_projection(project(self.plan, "first_step", step_s, step_s, elapsed_s, steps_done))
        else:
            self.times.append(step_s)
        if steps_done < 1 + CALIBRATION_STEPS and not window_done:
            return None
        estimate = statistics.median(self.times) if self.times else self.first_step_s
        self.result = calibrate(self.plan, estimate, self.first_step_s, elapsed_s, steps_done)
        if self.on_projection is not None:
            self.on_projection(self.result.projection)
        return self.result.current_warmup, self.result.warmup, self.result.measurement

    def record(self) -> dict[str, Any]:
        """JSON-ready record of the calibration (estimate, whether counts changed, projection)."""
        res = self.result
        return {
            "budget_s": self.plan.budget_s,
            "budget_floor_steps": self.plan.budget_floor_steps,
            "calibrated": res is not None and res.changed,
            "step_s_estimate": res.projection.step_s if res is not None else None,
            "estimate_steps": len(self.times) or (1 if self.first_step_s is not None else 0),
            "projection": res.projection.to_dict() if res is not None else None,
        }
