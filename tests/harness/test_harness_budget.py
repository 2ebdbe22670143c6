"""Run identity, the wall-clock origin and the time budget of harness.loop, on a fake clock.

Durations are dyadic fractions so that every sum is exact and the projected run time can be
compared with the fake clock's final reading with ``==``.
"""

from __future__ import annotations

import json
import math

import pytest

from harness.budget import CALIBRATION_STEPS, Projection, calibrate, floor_per_window, steps_needed
from harness.loop import Measurement, run_plan
from harness.records import Phase
from harness.windows import RunPlan, Window, WindowError, plan_from_mapping
from tests.harness.test_harness_loop import FakeClock, FakeWorkload


class SlowFirstStep(FakeWorkload):
    """The first step carries ``init_s`` of lazy initialization, as a real first step does."""

    def __init__(self, clock: FakeClock, init_s: float = 10.0, fail_at_call: int | None = None) -> None:
        super().__init__(clock, wait_s=0.25, compute_s=1.0, fail_at_call=fail_at_call)
        self.init_s = init_s

    def step(self, batch: tuple[int, int]) -> int:
        if self.step_calls == 0:
            self.clock.advance(self.init_s)
        return super().step(batch)


def budget_plan(budget_s: float | None, warm: int = 5, meas: int = 20, repeats: int = 3) -> RunPlan:
    return RunPlan(Window(warm, 0.0), Window(meas, 0.0), repeats, budget_s=budget_s)


def run(plan: RunPlan, init_s: float = 10.0) -> tuple[Measurement, list[Projection], FakeClock]:
    clock = FakeClock()
    seen: list[Projection] = []
    m = run_plan(SlowFirstStep(clock, init_s), plan, clock=clock, on_projection=seen.append, wall_clock=lambda: 1e9)
    return m, seen, clock


def steps_per_window(m: Measurement) -> list[int]:
    return [w.steps for w in m.windows]


# --- identity and the wall-clock origin --------------------------------------------------------------


def test_run_uid_is_minted_per_measurement() -> None:
    a, b = Measurement(), Measurement()
    assert len(a.run_uid) == 32
    int(a.run_uid, 16)
    assert a.run_uid != b.run_uid
    assert Measurement(run_uid="given").run_uid == "given"  # all ranks of one run can share one


def test_origin_unix_s_places_steps_in_real_time() -> None:
    clock = FakeClock(start=500.0)
    m = run_plan(FakeWorkload(clock), RunPlan(Window(1, 0.0), Window(2, 0.0)), clock=clock, wall_clock=lambda: 1.7e9)
    assert (m.origin_monotonic_s, m.origin_unix_s) == (500.0, 1.7e9)
    # an explicit origin 4 s before the loop started is 4 s earlier in wall-clock time too
    clock2 = FakeClock(start=10.0)
    m2 = run_plan(
        FakeWorkload(clock2),
        RunPlan(Window(1, 0.0), Window(1, 0.0)),
        clock=clock2,
        origin=6.0,
        wall_clock=lambda: 1.7e9,
    )
    assert (m2.origin_monotonic_s, m2.origin_unix_s) == (6.0, 1.7e9 - 4.0)
    assert m2.origin_unix_s is not None
    assert m2.origin_unix_s + m2.steps[0].start_s == 1.7e9  # the first step started when the loop did
    doc = json.loads(json.dumps(m2.to_dict()))
    assert set(doc) == {"run_uid", "origin_unix_s", "origin_monotonic_s", "complete", "plan", "steps", "windows"}
    assert doc["steps"][0]["phase"] == "warmup"


# --- without a budget: exactly the plan ---------------------------------------------------------------


def test_without_budget_the_plan_runs_as_given_and_is_recorded() -> None:
    clock = FakeClock()
    plan = RunPlan(Window(2, 0.0), Window(3, 5.0), repeats=2)
    m = run_plan(FakeWorkload(clock), plan, clock=clock)
    assert steps_per_window(m) == [2, 4, 2, 4]  # 3 steps take 3.75 s < 5 s: a fourth
    assert m.plan == {
        "repeats": 2,
        "budget_s": None,
        "budget_floor_steps": 10,
        "calibrated": False,
        "step_s_estimate": None,
        "estimate_steps": 0,
        "projection": None,
        "windows": [
            {"repeat": r, "phase": ph, "min_steps": n, "min_seconds": s}
            for r in range(2)
            for ph, n, s in (("warmup", 2, 0.0), ("measurement", 3, 5.0))
        ],
    }


def test_a_projection_callback_without_budget_changes_nothing() -> None:
    m, seen, _ = run(budget_plan(None))
    assert steps_per_window(m) == [5, 20] * 3
    assert [p.stage for p in seen] == ["first_step", "calibrated"]
    first, cal = seen
    assert first.step_s == 11.25  # the first step: 10 s of init + 1.25 s
    assert first.projected_total_s == 11.25 + 11.25 * (4 + 3 * 20 + 2 * 5)
    assert cal.step_s == 1.25  # median of the next CALIBRATION_STEPS steps
    assert cal.elapsed_s == 11.25 + CALIBRATION_STEPS * 1.25
    assert cal.projected_total_s == 11.25 + 1.25 * (4 + 60 + 10)
    assert (cal.budget_s, cal.over_budget_s, cal.floor_overshoots) == (None, 0.0, False)
    assert m.plan is not None
    assert (m.plan["calibrated"], m.plan["step_s_estimate"], m.plan["estimate_steps"]) == (False, 1.25, 2)


# --- with a budget ------------------------------------------------------------------------------------


def test_a_budget_that_fits_keeps_the_plan() -> None:
    m, seen, clock = run(budget_plan(120.0))
    assert steps_per_window(m) == [5, 20] * 3
    assert clock.t == seen[-1].projected_total_s == 11.25 + 1.25 * 74
    assert m.plan is not None and m.plan["calibrated"] is False


def test_a_tight_budget_lowers_the_measurement_window() -> None:
    m, seen, clock = run(budget_plan(60.0))
    # at calibration: 13.75 s gone, 1.25 s/step -> 37 steps left; 2 warm-up steps of repeat 0 and
    # 2 x 5 later warm-up steps stay, so each of the 3 measurement windows gets floor(25 / 3) = 8
    assert steps_per_window(m) == [5, 8, 5, 8, 5, 8]
    cal = seen[-1]
    assert (cal.measure_steps, cal.warmup_steps, cal.over_budget_s, cal.floor_overshoots) == (8, [5, 5, 5], 0.0, False)
    assert clock.t == cal.projected_total_s == 58.75 <= 60.0
    assert m.plan is not None
    assert m.plan["calibrated"] is True
    assert m.plan["windows"][1] == {"repeat": 0, "phase": "measurement", "min_steps": 8, "min_seconds": 0.0}
    assert m.plan["projection"] == cal.to_dict()
    json.dumps(m.plan)


def test_an_interrupted_run_keeps_the_calibrated_plan() -> None:
    clock = FakeClock()
    out = Measurement()
    with pytest.raises(RuntimeError, match="boom"):
        run_plan(SlowFirstStep(clock, fail_at_call=7), budget_plan(60.0), out, clock=clock)
    assert not out.complete
    assert out.plan is not None
    assert out.plan["calibrated"] is True
    assert out.plan["windows"] == [{"repeat": 0, "phase": "warmup", "min_steps": 5, "min_seconds": 0.0}]


def test_a_budget_below_the_floor_keeps_the_floor_and_says_by_how_much() -> None:
    m, seen, clock = run(budget_plan(20.0))
    # the floor: 10 measured steps over 3 repeats -> 4 per window; later warm-ups 1 step; repeat 0's ends now
    assert steps_per_window(m) == [3, 4, 1, 4, 1, 4]
    assert sum(w.steps for w in m.windows if w.phase is Phase.MEASUREMENT) >= 10
    cal = seen[-1]
    assert cal.floor_overshoots
    assert cal.projected_total_s == clock.t == 13.75 + 1.25 * (12 + 2)
    assert cal.over_budget_s == clock.t - 20.0
    assert "over the 0.3 min budget by 11 s even at the floor of measured steps" in cal.explain()
    assert cal.floor_total_s == clock.t  # the run ran at its floor
    first = seen[0]
    assert first.stage == "first_step"
    assert first.floor_overshoots and first.over_budget_s > 0
    # from the first step (11.25 s, init included): 4 x 3 measured + 2 later warm-up steps at 11.25 s
    assert first.floor_total_s == 11.25 + 11.25 * (12 + 2)


def test_a_one_step_warmup_calibrates_from_the_first_step() -> None:
    m, seen, _ = run(budget_plan(100.0, warm=1, meas=20, repeats=1), init_s=4.75)
    # the first step (6 s) is the only estimate: pessimistic, so the window is cut to what 6 s steps allow
    assert [p.stage for p in seen] == ["first_step", "calibrated"]
    assert seen[-1].step_s == 6.0
    assert m.plan is not None
    assert (m.plan["estimate_steps"], m.plan["step_s_estimate"]) == (1, 6.0)
    assert steps_per_window(m) == [1, math.floor((100.0 - 6.0) / 6.0)]  # 15 of the planned 20
    assert not seen[-1].floor_overshoots
    # with 60 s, 9 steps would fit but the floor is 10 measured steps: it keeps 10 and says so
    m60, seen60, _ = run(budget_plan(60.0, warm=1, meas=20, repeats=1), init_s=4.75)
    assert steps_per_window(m60) == [1, 10]
    assert seen60[-1].floor_overshoots
    assert seen60[-1].over_budget_s == 6.0


def test_time_minimums_count_towards_the_projection() -> None:
    clock = FakeClock()
    wl = FakeWorkload(clock, wait_s=0.0, compute_s=0.125)
    plan = RunPlan(Window(3, 0.0), Window(5, 10.0), repeats=1, budget_s=5.0)
    m = run_plan(wl, plan, clock=clock)
    # 10 s of measurement would be 80 steps; 5 s minus 0.375 s of warm-up affords 37
    assert steps_per_window(m) == [3, 37]
    assert clock.t == 3 * 0.125 + 37 * 0.125 <= 5.0


def test_calibrate_and_steps_needed_directly() -> None:
    assert steps_needed(Window(5, 10.0), 0.5) == 20
    assert steps_needed(Window(5, 1.0), 0.5) == 5
    assert steps_needed(Window(5, 1.0), 0.0) == 5
    plan = budget_plan(100.0, warm=3, meas=10, repeats=5)
    assert floor_per_window(plan) == 2
    assert floor_per_window(budget_plan(1.0, repeats=1)) == 10
    keep = calibrate(plan, 1.0, 5.0, 5.0, 3)
    assert not keep.changed
    assert keep.measurement == plan.measurement
    cut = calibrate(plan, 2.0, 5.0, 5.0, 3)
    assert cut.changed
    assert cut.projection.projected_total_s <= 100.0
    assert 2 <= cut.measurement.min_steps < 10


# --- the plan's budget fields ---------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, -1.0, math.nan, math.inf, True, "60"])
def test_bad_budget_is_refused(bad: object) -> None:
    with pytest.raises(WindowError, match="budget_s"):
        RunPlan(Window(1, 0.0), Window(1, 0.0), budget_s=bad).check()  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [3, 0, 2.5, None])
def test_bad_floor_is_refused(bad: object) -> None:
    with pytest.raises(WindowError, match="budget_floor_steps"):
        RunPlan(Window(1, 0.0), Window(1, 0.0), budget_s=10.0, budget_floor_steps=bad).check()  # type: ignore[arg-type]


def test_plan_from_mapping_reads_the_budget() -> None:
    raw: dict[str, object] = {"warmup_steps": 2, "warmup_seconds": 0, "measure_steps": 9, "measure_seconds": 0}
    assert plan_from_mapping(raw).budget_s is None
    plan = plan_from_mapping({**raw, "budget_s": 90, "budget_floor_steps": 12})
    assert (plan.budget_s, plan.budget_floor_steps) == (90, 12)
