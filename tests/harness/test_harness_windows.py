"""Window and run-plan validation: an invalid plan fails before the workload runs at all."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from harness.loop import run_plan
from harness.windows import RunPlan, Window, WindowError, plan_from_mapping
from harness.workload import Workload


class CountingWorkload(Workload):
    """Counts every call; any call at all means the plan was not refused up front."""

    sync_each_step = False

    def __init__(self) -> None:
        self.calls: list[str] = []

    def batches(self) -> Iterator[int]:
        self.calls.append("batches")
        return iter(range(1_000_000))

    def step(self, batch: int) -> int:
        self.calls.append("step")
        return 1

    def synchronize(self) -> None:
        self.calls.append("sync")


def clock() -> float:
    return 0.0


GOOD = Window(1, 0.0)


@pytest.mark.parametrize(
    ("window", "match"),
    [
        (Window(0, 0.0), "at least 1"),
        (Window(-2, 0.0), "at least 1"),
        (Window(2.5, 0.0), "whole number"),  # type: ignore[arg-type]
        (Window(3.0, 0.0), "whole number"),  # type: ignore[arg-type]
        (Window("3", 0.0), "whole number"),  # type: ignore[arg-type]
        (Window(True, 0.0), "whole number"),
        (Window(False, 0.0), "whole number"),
        (Window(1, -0.5), "finite number >= 0"),
        (Window(1, math.nan), "finite number >= 0"),
        (Window(1, math.inf), "finite number >= 0"),
        (Window(1, -math.inf), "finite number >= 0"),
        (Window(1, "1"), "must be a number"),  # type: ignore[arg-type]
        (Window(1, True), "must be a number"),
    ],
)
@pytest.mark.parametrize("which", ["warmup", "measurement"])
def test_invalid_window_fails_before_running(window: Window, match: str, which: str) -> None:
    p = RunPlan(warmup=window, measurement=GOOD) if which == "warmup" else RunPlan(warmup=GOOD, measurement=window)
    wl = CountingWorkload()
    with pytest.raises(WindowError, match=match) as info:
        run_plan(wl, p, clock=clock)
    assert str(info.value).startswith(f"{which}.")
    assert wl.calls == []


@pytest.mark.parametrize("repeats", [0, -1, 1.5, True])
def test_invalid_repeats_fail_before_running(repeats: object) -> None:
    wl = CountingWorkload()
    with pytest.raises(WindowError, match="repeats"):
        run_plan(wl, RunPlan(GOOD, GOOD, repeats=repeats), clock=clock)  # type: ignore[arg-type]
    assert wl.calls == []


@pytest.mark.parametrize("max_steps", [0, 5, 14])
def test_max_steps_below_warmup_plus_measurement_is_refused(max_steps: int) -> None:
    wl = CountingWorkload()
    p = RunPlan(Window(5, 0.0), Window(10, 0.0), repeats=1, max_steps=max_steps)
    with pytest.raises(WindowError, match="swallow") as info:
        run_plan(wl, p, clock=clock)
    assert "15" in str(info.value)
    assert wl.calls == []


def test_max_steps_equal_to_need_is_accepted() -> None:
    wl = CountingWorkload()
    m = run_plan(wl, RunPlan(Window(5, 0.0), Window(10, 0.0), repeats=1, max_steps=15), clock=clock)
    assert m.complete
    assert wl.calls.count("step") == 15


def test_valid_window_checks_and_is_done() -> None:
    Window(1, 0).check("w")
    Window(3, 2.5).check("w")
    w = Window(3, 2.0)
    assert not w.is_done(2, 10.0)
    assert not w.is_done(10, 1.9)
    assert w.is_done(3, 2.0)
    assert w.is_done(4, 3.0)


RAW: dict[str, object] = {
    "warmup_steps": 2,
    "warmup_seconds": 0.5,
    "measure_steps": 10,
    "measure_seconds": 3.0,
    "repeats": 3,
}


def test_plan_from_mapping_builds_plan() -> None:
    assert plan_from_mapping(dict(RAW)) == RunPlan(Window(2, 0.5), Window(10, 3.0), repeats=3, max_steps=None)
    with_cap = plan_from_mapping({**RAW, "max_steps": 12})
    assert with_cap.max_steps == 12
    no_repeats = {k: v for k, v in RAW.items() if k != "repeats"}
    assert plan_from_mapping(no_repeats).repeats == 1


@pytest.mark.parametrize("missing", ["warmup_steps", "warmup_seconds", "measure_steps", "measure_seconds"])
def test_plan_from_mapping_missing_key(missing: str) -> None:
    raw = {k: v for k, v in RAW.items() if k != missing}
    with pytest.raises(WindowError, match=f"windows needs {missing}$"):
        plan_from_mapping(raw)


def test_plan_from_mapping_checks_values() -> None:
    with pytest.raises(WindowError, match=r"measurement\.min_steps"):
        plan_from_mapping({**RAW, "measure_steps": 0})
    with pytest.raises(WindowError, match="swallow"):
        plan_from_mapping({**RAW, "max_steps": 11})
    with pytest.raises(WindowError, match=r"warmup\.min_seconds"):
        plan_from_mapping({**RAW, "warmup_seconds": float("nan")})


def test_window_error_is_value_error() -> None:
    assert issubclass(WindowError, ValueError)
