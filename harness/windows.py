"""Warm-up and measurement windows.

A window ends when BOTH its minimum step count and its minimum duration are met,
the rule of MLPerf LoadGen (``min_query_count`` and ``min_duration``), so a fast
step cannot end a window too early and a slow one cannot end it with too few
samples. A run is ``repeats`` times (warm-up window, then measurement window).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


class WindowError(ValueError):
    """A window or run plan that cannot give a valid measurement.

    Raised before anything runs; the message says which value to change.
    """


@dataclass(frozen=True)
class Window:
    """One window of a run.

    Attributes:
        min_steps: optimizer steps the window must contain (>= 1).
        min_seconds: wall-clock seconds the window must last (>= 0, finite).
    """

    min_steps: int
    min_seconds: float

    def check(self, name: str) -> None:
        """Raise :class:`WindowError` if this window is unusable.

        Args:
            name: how the window is called in messages, e.g. ``"warmup"``.
        """
        if isinstance(self.min_steps, bool) or not isinstance(self.min_steps, int):
            raise WindowError(f"{name}.min_steps must be a whole number, got {self.min_steps!r}")
        if self.min_steps < 1:
            raise WindowError(
                f"{name}.min_steps is {self.min_steps}; it must be at least 1 (set {name}_steps to 1 or more)"
            )
        if not isinstance(self.min_seconds, (int, float)) or isinstance(self.min_seconds, bool):
            raise WindowError(f"{name}.min_seconds must be a number, got {self.min_seconds!r}")
        if not math.isfinite(self.min_seconds) or self.min_seconds < 0:
            raise WindowError(
                f"{name}.min_seconds is {self.min_seconds}; it must be a finite number >= 0 "
                f"(set {name}_seconds to 0 or more)"
            )

    def is_done(self, steps: int, elapsed_s: float) -> bool:
        """True when both minimums are met.

        Args:
            steps: steps completed in this window.
            elapsed_s: seconds since the window started.
        """
        return steps >= self.min_steps and elapsed_s >= self.min_seconds


@dataclass(frozen=True)
class RunPlan:
    """Warm-up and measurement windows, repeated.

    Attributes:
        warmup: the window whose steps are recorded but never scored.
        measurement: the window every statistic is computed from.
        repeats: how many times the (warm-up, measurement) pair runs (>= 1).
        max_steps: optional cap on the steps one repeat can take (for example the
            number of batches a finite dataset yields). A plan whose two windows
            need more steps than that is refused, because the warm-up would
            swallow the measurement.
        budget_s: optional time budget of the whole run, seconds from the run's origin.
            The loop then measures the step time in the first warm-up steps and lowers
            the counts so that the run fits (:mod:`harness.budget`). None: the windows
            run exactly as given.
        budget_floor_steps: measured steps, in all measurement windows together, that a
            budget may not cut below (10: five batches of two steps, a 95% interval
            with t = 2.78). Spread over the repeats, at least 2 per window.
    """

    warmup: Window
    measurement: Window
    repeats: int = 1
    max_steps: int | None = None
    budget_s: float | None = None
    budget_floor_steps: int = 10

    def check(self) -> None:
        """Raise :class:`WindowError` if the plan cannot give a valid measurement."""
        self.warmup.check("warmup")
        self.measurement.check("measurement")
        if isinstance(self.repeats, bool) or not isinstance(self.repeats, int) or self.repeats < 1:
            raise WindowError(f"repeats is {self.repeats!r}; it must be a whole number >= 1")
        if self.budget_s is not None and (
            isinstance(self.budget_s, bool)
            or not isinstance(self.budget_s, (int, float))
            or not math.isfinite(self.budget_s)
            or self.budget_s <= 0
        ):
            raise WindowError(f"budget_s is {self.budget_s!r}; it must be a number of seconds > 0 (or unset)")
        floor = self.budget_floor_steps
        if isinstance(floor, bool) or not isinstance(floor, int) or floor < 4:
            raise WindowError(
                f"budget_floor_steps is {floor!r}; it must be a whole number >= 4 (two batches of two steps)"
            )
        if self.max_steps is not None:
            needed = self.warmup.min_steps + self.measurement.min_steps
            if self.max_steps < needed:
                raise WindowError(
                    f"one repeat can take at most {self.max_steps} steps, but warm-up needs "
                    f"{self.warmup.min_steps} and measurement {self.measurement.min_steps} "
                    f"({needed} in all): the warm-up would swallow the measurement. Lower "
                    f"warmup_steps/measure_steps, or provide more data per repeat"
                )


def plan_from_mapping(raw: dict[str, object]) -> RunPlan:
    """Build a plan from the job's ``windows`` mapping.

    Keys: ``warmup_steps``, ``warmup_seconds``, ``measure_steps``,
    ``measure_seconds``, ``repeats`` and optionally ``max_steps``, ``budget_s``
    and ``budget_floor_steps``.

    Raises:
        WindowError: a key is missing or a value is invalid.
    """
    try:
        plan = RunPlan(
            warmup=Window(raw["warmup_steps"], raw["warmup_seconds"]),  # type: ignore[arg-type]
            measurement=Window(raw["measure_steps"], raw["measure_seconds"]),  # type: ignore[arg-type]
            repeats=raw.get("repeats", 1),  # type: ignore[arg-type]
            max_steps=raw.get("max_steps"),  # type: ignore[arg-type]
            budget_s=raw.get("budget_s"),  # type: ignore[arg-type]
            budget_floor_steps=raw.get("budget_floor_steps", 10),  # type: ignore[arg-type]
        )
    except KeyError as exc:
        raise WindowError(f"windows needs {exc.args[0]}") from None
    plan.check()
    return plan
