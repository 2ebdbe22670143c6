"""The measured loop (harness.loop.run_plan) driven by a fake workload on a fake clock.

All durations are dyadic fractions (0.125, 0.25, 1.0, ...) so that every sum the
loop computes is exact in binary floating point and can be compared with ``==``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import cast

import pytest

from harness.loop import Measurement, WorkloadError, run_plan
from harness.records import Phase, StepRecord, WindowRecord
from harness.windows import RunPlan, Window
from harness.workload import Workload


class FakeClock:
    """A clock that only moves when told to."""

    def __init__(self, start: float = 0.0) -> None:
        self.t = start

    def __call__(self) -> float:
        return self.t

    def advance(self, dt: float) -> None:
        self.t += dt


class FakeWorkload(Workload):
    """A workload whose data wait, compute and synchronize costs are known exactly.

    Args:
        clock: the clock it advances.
        wait_s: seconds each ``next(batches)`` takes.
        compute_s: seconds each ``step`` takes.
        sync_s: seconds each ``synchronize`` takes.
        samples: what ``step`` returns (a value or a list consumed call by call).
        batches_per_iterator: how many batches each ``batches()`` iterator yields (None: endless).
        fail_at_call: 0-based ``step`` call that raises ``RuntimeError`` (None: never).
        sync_each_step: the harness contract attribute.
    """

    def __init__(
        self,
        clock: FakeClock,
        *,
        wait_s: float = 0.25,
        compute_s: float = 1.0,
        sync_s: float = 0.0,
        samples: object = 8,
        batches_per_iterator: int | None = None,
        fail_at_call: int | None = None,
        sync_each_step: bool = False,
    ) -> None:
        self.clock = clock
        self.wait_s = wait_s
        self.compute_s = compute_s
        self.sync_s = sync_s
        self.samples = samples
        self.batches_per_iterator = batches_per_iterator
        self.fail_at_call = fail_at_call
        self.sync_each_step = sync_each_step
        self.batches_calls = 0
        self.step_calls = 0
        self.sync_calls = 0
        self.seen_batches: list[tuple[int, int]] = []
        self.events: list[str] = []

    def batches(self) -> Iterator[tuple[int, int]]:
        iterator_id = self.batches_calls
        self.batches_calls += 1

        def gen() -> Iterator[tuple[int, int]]:
            i = 0
            while self.batches_per_iterator is None or i < self.batches_per_iterator:
                # runs inside next(): this is the data wait the harness must see
                self.events.append("next")
                self.clock.advance(self.wait_s)
                yield (iterator_id, i)
                i += 1

        return gen()

    def step(self, batch: tuple[int, int]) -> int:
        call = self.step_calls
        self.step_calls += 1
        self.events.append("step")
        self.seen_batches.append(batch)
        self.clock.advance(self.compute_s)
        if self.fail_at_call is not None and call == self.fail_at_call:
            raise RuntimeError(f"boom at step call {call}")
        # may deliberately break the contract (0, a float, None...): the harness must catch it
        if isinstance(self.samples, list):
            return cast(int, self.samples[call])
        return cast(int, self.samples)

    def synchronize(self) -> None:
        self.sync_calls += 1
        self.events.append("sync")
        self.clock.advance(self.sync_s)


def plan(
    warm_steps: int = 1,
    warm_s: float = 0.0,
    meas_steps: int = 1,
    meas_s: float = 0.0,
    repeats: int = 1,
    max_steps: int | None = None,
) -> RunPlan:
    return RunPlan(Window(warm_steps, warm_s), Window(meas_steps, meas_s), repeats, max_steps)


def measured(m: Measurement) -> list[WindowRecord]:
    return [w for w in m.windows if w.phase is Phase.MEASUREMENT]


def test_fake_workload_satisfies_protocol() -> None:
    assert isinstance(FakeWorkload(FakeClock()), Workload)


# --- when a window ends -------------------------------------------------------------------------


def test_steps_met_early_but_time_not_window_continues() -> None:
    clock = FakeClock()
    wl = FakeWorkload(clock, wait_s=0.25, compute_s=1.0)  # 1.25 s per step
    # measurement needs 2 steps and 5 s: 2 steps take only 2.5 s, so it must run 4 steps (5.0 s)
    m = run_plan(wl, plan(warm_steps=1, meas_steps=2, meas_s=5.0), clock=clock)
    (w,) = measured(m)
    assert w.steps == 4
    assert w.seconds == 5.0
    assert w.samples == 4 * 8


def test_time_met_early_but_steps_not_window_continues() -> None:
    clock = FakeClock()
    wl = FakeWorkload(clock, wait_s=0.25, compute_s=1.0)
    # 1 s is reached after the first step, but 6 steps are required
    m = run_plan(wl, plan(warm_steps=3, warm_s=0.5, meas_steps=6, meas_s=1.0), clock=clock)
    warm, meas = m.windows
    assert (warm.phase, warm.steps) == (Phase.WARMUP, 3)
    assert (meas.phase, meas.steps) == (Phase.MEASUREMENT, 6)
    assert meas.seconds == 6 * 1.25
    assert wl.step_calls == 9


def test_window_ends_as_soon_as_both_minimums_are_met() -> None:
    clock = FakeClock()
    wl = FakeWorkload(clock, wait_s=0.25, compute_s=1.0)
    # 5.0 s is reached exactly at step 4 (>=, not >): no fifth step
    m = run_plan(wl, plan(warm_steps=1, meas_steps=1, meas_s=5.0), clock=clock)
    assert measured(m)[0].steps == 4
    # 5.125 s is not reached at step 4 (5.0 s), so a fifth step runs
    clock2 = FakeClock()
    wl2 = FakeWorkload(clock2, wait_s=0.25, compute_s=1.0)
    m2 = run_plan(wl2, plan(warm_steps=1, meas_steps=1, meas_s=5.125), clock=clock2)
    assert measured(m2)[0].steps == 5


# --- what is recorded ---------------------------------------------------------------------------


def test_exact_data_wait_and_compute_recorded() -> None:
    clock = FakeClock(start=100.0)
    wl = FakeWorkload(clock, wait_s=0.25, compute_s=0.5, sync_s=0.125, samples=16)
    m = run_plan(wl, plan(warm_steps=2, meas_steps=3), clock=clock)
    assert m.complete
    assert len(m.steps) == 5
    for rec in m.steps:
        assert rec.data_wait_s == 0.25
        assert rec.compute_s == 0.5  # sync_each_step is False: the sync is not part of the step
        assert rec.samples == 16
        assert rec.step_s == 0.75
    assert [(s.phase, s.index) for s in m.steps] == [
        (Phase.WARMUP, 0),
        (Phase.WARMUP, 1),
        (Phase.MEASUREMENT, 0),
        (Phase.MEASUREMENT, 1),
        (Phase.MEASUREMENT, 2),
    ]
    # origin defaults to the clock at the call (100.0); the opening sync costs 0.125 before the first step
    assert m.steps[0].start_s == 0.125
    assert m.steps[1].start_s == 0.125 + 0.75
    warm, meas = m.windows
    # window seconds run from after the opening sync to after the closing sync
    assert warm == WindowRecord(0, Phase.WARMUP, 0.125, 2 * 0.75 + 0.125, 2, 32)
    meas_start = 0.125 + warm.seconds + 0.125
    assert meas == WindowRecord(0, Phase.MEASUREMENT, meas_start, 3 * 0.75 + 0.125, 3, 48)
    assert m.steps[2].start_s == meas_start


def test_sync_each_step_time_counts_as_compute() -> None:
    clock = FakeClock()
    wl = FakeWorkload(clock, wait_s=0.25, compute_s=0.5, sync_s=0.125, sync_each_step=True)
    m = run_plan(wl, plan(warm_steps=1, meas_steps=2), clock=clock)
    assert all(s.compute_s == 0.625 and s.data_wait_s == 0.25 for s in m.steps)
    # two windows: 2 edge syncs each, plus one per step
    assert wl.sync_calls == 2 * 2 + 3


def test_explicit_origin() -> None:
    clock = FakeClock(start=10.0)
    wl = FakeWorkload(clock)
    m = run_plan(wl, plan(), clock=clock, origin=4.0)
    assert m.windows[0].start_s == 6.0
    assert m.steps[0].start_s == 6.0


def test_synchronize_called_at_window_edges() -> None:
    clock = FakeClock()
    wl = FakeWorkload(clock)
    run_plan(wl, plan(warm_steps=2, meas_steps=3, repeats=2), clock=clock)
    assert wl.sync_calls == 2 * 2 * 2  # repeats x windows x (open, close)
    warmup = ["sync", *["next", "step"] * 2, "sync"]
    measurement = ["sync", *["next", "step"] * 3, "sync"]
    one_repeat = warmup + measurement
    assert wl.events == one_repeat * 2


def test_repeats_produce_window_records() -> None:
    clock = FakeClock()
    wl = FakeWorkload(clock, wait_s=0.25, compute_s=1.0, samples=4)
    m = run_plan(wl, plan(warm_steps=2, meas_steps=3, repeats=3), clock=clock)
    assert m.complete
    assert [(w.repeat, w.phase, w.steps, w.samples, w.seconds) for w in m.windows] == [
        (r, ph, n, 4 * n, 1.25 * n) for r in range(3) for ph, n in ((Phase.WARMUP, 2), (Phase.MEASUREMENT, 3))
    ]
    # windows are laid end to end on one time base
    starts = [w.start_s for w in m.windows]
    assert starts == [0.0, 2.5, 6.25, 8.75, 12.5, 15.0]
    assert [s.repeat for s in m.steps] == [0] * 5 + [1] * 5 + [2] * 5
    assert [s.index for s in m.steps] == [0, 1, 0, 1, 2] * 3


def test_fresh_batch_iterator_per_repeat() -> None:
    clock = FakeClock()
    wl = FakeWorkload(clock, batches_per_iterator=5)  # exactly enough for one repeat
    run_plan(wl, plan(warm_steps=2, meas_steps=3, repeats=3), clock=clock)
    assert wl.batches_calls == 3
    assert wl.seen_batches == [(r, i) for r in range(3) for i in range(5)]


def test_on_step_receives_each_record() -> None:
    clock = FakeClock()
    wl = FakeWorkload(clock)
    seen: list[StepRecord] = []
    m = run_plan(wl, plan(warm_steps=2, meas_steps=2, repeats=2), clock=clock, on_step=seen.append)
    assert seen == m.steps
    assert len(seen) == 8


def test_result_is_the_passed_in_measurement() -> None:
    clock = FakeClock()
    out = Measurement()
    got = run_plan(FakeWorkload(clock), plan(), out, clock=clock)
    assert got is out
    assert out.complete
    assert len(out.windows) == 2


# --- contract violations ------------------------------------------------------------------------


def test_batch_iterator_ending_raises_workload_error() -> None:
    clock = FakeClock()
    wl = FakeWorkload(clock, batches_per_iterator=4)
    out = Measurement()
    with pytest.raises(WorkloadError, match="ended after 2 measurement steps of repeat 0"):
        run_plan(wl, plan(warm_steps=2, meas_steps=3), out, clock=clock)
    assert not out.complete
    assert len(out.steps) == 4
    assert [w.phase for w in out.windows] == [Phase.WARMUP]


@pytest.mark.parametrize("bad", [0, -3, 2.0, None, "8", True])
def test_step_returning_bad_sample_count_raises(bad: object) -> None:
    clock = FakeClock()
    wl = FakeWorkload(clock, samples=bad)
    out = Measurement()
    with pytest.raises(WorkloadError, match="must return samples > 0"):
        run_plan(wl, plan(), out, clock=clock)
    assert wl.step_calls == 1
    assert out.steps == []
    assert not out.complete


def test_bad_sample_count_after_good_steps() -> None:
    clock = FakeClock()
    wl = FakeWorkload(clock, samples=[8, 8, 8, 0])
    out = Measurement()
    with pytest.raises(WorkloadError):
        run_plan(wl, plan(warm_steps=2, meas_steps=5), out, clock=clock)
    assert [s.samples for s in out.steps] == [8, 8, 8]


def test_exception_mid_run_keeps_partial_records() -> None:
    clock = FakeClock()
    # plan: per repeat 2 warm-up + 3 measurement steps; step call 7 is repeat 1, measurement step 0
    wl = FakeWorkload(clock, wait_s=0.25, compute_s=1.0, fail_at_call=7)
    out = Measurement()
    with pytest.raises(RuntimeError, match="boom at step call 7"):
        run_plan(wl, plan(warm_steps=2, meas_steps=3, repeats=3), out, clock=clock)
    assert out.complete is False
    assert len(out.steps) == 7
    assert [(w.repeat, w.phase) for w in out.windows] == [
        (0, Phase.WARMUP),
        (0, Phase.MEASUREMENT),
        (1, Phase.WARMUP),
    ]
    assert out.windows[1].steps == 3
    assert out.windows[1].seconds == 3.75
