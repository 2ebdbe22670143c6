"""Device step times (harness.device_timer): the loop's bookkeeping and the statistics built on them.

The loop and the summary are tested with a scripted timer that returns known device times,
only to check the harness's arithmetic: where each time lands, what the summary derives from
it. The real CUDA-event timer is tested on a GPU (marked ``gpu``, skipped without one).
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Iterator

import pytest

from harness.device_timer import CudaEventTimer, DeviceTimer, DeviceTimerError
from harness.intervals import step_spans, throughput_interval
from harness.loop import Measurement, WorkloadError, run_plan
from harness.records import Phase, StepRecord, WindowRecord
from harness.stats import summarize
from tests.harness.test_harness_loop import FakeClock, FakeWorkload, plan


class ScriptedTimer:
    """Returns the device times it is given, in order; checks the loop's call order."""

    method = "scripted device times (tests only)"

    def __init__(self, times: Iterator[float]) -> None:
        self.times = times
        self.open = False
        self.pending: list[float] = []
        self.collects = 0

    def step_started(self) -> None:
        assert not self.open
        self.open = True

    def step_ended(self) -> None:
        assert self.open
        self.open = False
        self.pending.append(next(self.times))

    def collect(self) -> list[float]:
        self.collects += 1
        out, self.pending = self.pending, []
        return out


class TimedWorkload(FakeWorkload):
    """A fake workload whose host compute times follow ``host_s`` (a host running ahead, then waiting)."""

    def __init__(self, clock: FakeClock, timer: DeviceTimer | None, host_s: Iterator[float]) -> None:
        super().__init__(clock, wait_s=0.0, compute_s=0.0)
        self.timer = timer
        self.host_s = host_s

    def step(self, batch: tuple[int, int]) -> int:
        self.clock.advance(next(self.host_s))
        return super().step(batch)

    def device_timer(self) -> DeviceTimer | None:  # type: ignore[override]
        return self.timer


def test_the_scripted_timer_is_a_device_timer() -> None:
    assert isinstance(ScriptedTimer(iter([])), DeviceTimer)


def test_each_step_gets_its_device_time_at_the_window_edge_and_keeps_its_host_time() -> None:
    clock = FakeClock()
    timer = ScriptedTimer(iter([0.5, 0.25, 0.75, 1.0, 1.25]))
    wl = TimedWorkload(clock, timer, iter([0.125, 0.375, 0.125, 0.125, 0.375]))
    seen: list[StepRecord] = []
    m = run_plan(wl, plan(warm_steps=2, meas_steps=3), clock=clock, on_step=seen.append)
    assert [s.device_s for s in m.steps] == [0.5, 0.25, 0.75, 1.0, 1.25]
    assert [s.compute_s for s in m.steps] == [0.125, 0.375, 0.125, 0.125, 0.375]
    assert timer.collects == 2  # once per window, after its closing synchronize
    assert [s.device_s for s in seen] == [None] * 5  # the write-ahead log gets each step at once
    assert m.steps[0].to_dict()["device_s"] == 0.5
    assert StepRecord.from_dict(m.steps[0].to_dict()) == m.steps[0]


def test_without_a_timer_the_records_have_no_device_time() -> None:
    clock = FakeClock()
    m = run_plan(FakeWorkload(clock), plan(warm_steps=1, meas_steps=2), clock=clock)
    assert [s.device_s for s in m.steps] == [None] * 3
    assert StepRecord.from_dict({**m.steps[0].to_dict(), "device_s": None}).device_s is None


@pytest.mark.parametrize(
    ("times", "message"),
    [
        ([0.5, 0.5], "returned 1 step times for a window of 2 steps"),
        ([-0.5, 0.5], "returned -0.5 s for step 0"),
        ([float("nan"), 0.5], "returned nan s for step 0"),
    ],
)
def test_a_timer_that_breaks_the_contract_stops_the_run(times: list[float], message: str) -> None:
    class Short(ScriptedTimer):
        def collect(self) -> list[float]:
            got = super().collect()
            return got[:1] if "1 step times" in message else got

    clock = FakeClock()
    wl = TimedWorkload(clock, Short(iter(times)), itertools.repeat(0.25))
    out = Measurement()
    with pytest.raises(WorkloadError, match=message):
        run_plan(wl, plan(warm_steps=2, meas_steps=2), out, clock=clock)
    assert not out.complete


def _gpu_like_run(repeats: int = 2) -> Measurement:
    """Host launch times that swing (fast launches, then a long wait on a full queue) over a steady device.

    Each step: the host spends 0.125 s three times, then 0.625 s (mean 0.25 s); the device 0.25 s
    every step, plus a growing host wait so the host's own series trends upward.
    """
    clock = FakeClock()
    host = itertools.cycle([0.125, 0.125, 0.125, 0.625])
    drift = (0.0625 * (i // 4) for i in itertools.count())  # the host wait grows every 4 steps
    wl = TimedWorkload(clock, ScriptedTimer(itertools.repeat(0.25)), (h + d for h, d in zip(host, drift, strict=False)))
    return run_plan(wl, plan(warm_steps=4, meas_steps=16, repeats=repeats), clock=clock)


def test_the_summary_describes_the_device_and_keeps_the_host_apart() -> None:
    m = _gpu_like_run()
    s = summarize(m.steps, m.windows)
    assert s.step_time_source == "device"
    assert (s.step_time_median_s, s.step_time_p90_s, s.step_time_iqr_s, s.step_time_cv) == (0.25, 0.25, 0.0, 0.0)
    host = [x.step_s for x in m.steps if x.phase is Phase.MEASUREMENT]
    assert s.host_step_time_median_s == pytest.approx(statistics.median(host))
    assert s.host_step_time_cv == pytest.approx(statistics.stdev(host) / statistics.mean(host))
    assert s.host_step_time_cv > 0.4  # type: ignore[operator]  # the swing the device does not have
    measured = [w for w in m.windows if w.phase is Phase.MEASUREMENT]
    busy = sum(0.25 for x in m.steps if x.phase is Phase.MEASUREMENT) / sum(w.seconds for w in measured)
    assert s.device_busy_fraction == pytest.approx(busy)
    assert s.steady_state.status == "steady"  # the device's series, not the host's growing one
    host_only = [StepRecord(**{**x.__dict__, "device_s": None}) for x in m.steps]
    h = summarize(host_only, m.windows)
    assert h.step_time_source == "host" and h.host_step_time_median_s is None and h.device_busy_fraction is None
    assert h.steady_state.status == "trending"
    assert h.throughput == s.throughput  # the throughput is the windows' either way


def test_one_step_without_a_device_time_makes_the_summary_the_hosts() -> None:
    m = _gpu_like_run(repeats=1)
    steps = list(m.steps)
    steps[-1] = StepRecord(**{**steps[-1].__dict__, "device_s": None})
    assert summarize(steps, m.windows).step_time_source == "host"


def test_device_spans_share_the_window_in_proportion_and_narrow_the_interval() -> None:
    m = _gpu_like_run(repeats=1)
    win = next(w for w in m.windows if w.phase is Phase.MEASUREMENT)
    ms = [s for s in m.steps if s.phase is Phase.MEASUREMENT]
    spans = step_spans(ms, win)
    assert sum(spans) == pytest.approx(win.seconds)
    assert spans == pytest.approx([win.seconds / len(ms)] * len(ms))  # equal device times, equal shares
    on_device = throughput_interval(m.steps, m.windows)
    on_host = throughput_interval([StepRecord(**{**s.__dict__, "device_s": None}) for s in m.steps], m.windows)
    assert on_device.__class__.__name__ == "Interval" and on_host.__class__.__name__ == "Interval"
    assert on_device.high - on_device.low < on_host.high - on_host.low  # type: ignore[union-attr,operator]


def test_device_spans_follow_unequal_device_times() -> None:
    win = WindowRecord(0, Phase.MEASUREMENT, 10.0, 4.0, 2, 20)
    ms = [
        StepRecord(0, Phase.MEASUREMENT, 0, 10.0, 0.0, 0.1, 10, 0, 1.0),
        StepRecord(0, Phase.MEASUREMENT, 1, 10.1, 0.0, 0.1, 10, 0, 3.0),
    ]
    assert step_spans(ms, win) == [1.0, 3.0]


def test_the_cuda_timer_refuses_calls_out_of_order_before_touching_the_device() -> None:
    pytest.importorskip("torch")
    timer = CudaEventTimer("cuda:0")  # building it needs torch, not a GPU
    assert timer.method == "CUDA events around each step on cuda:0, read at the window edges"
    with pytest.raises(DeviceTimerError, match="never started"):
        timer.step_ended()
    assert timer.collect() == []


@pytest.mark.gpu
def test_cuda_events_time_the_device_work_of_each_step() -> None:
    import torch

    timer = CudaEventTimer(torch.device("cuda", 0))
    a = torch.randn(4096, 4096, device="cuda")
    for n in (1, 4):  # the second step queues four times the work of the first
        timer.step_started()
        for _ in range(n):
            a = (a @ a).tanh()
        timer.step_ended()
    torch.cuda.synchronize()
    first, second = timer.collect()
    assert 0 < first < second
    assert second == pytest.approx(4 * first, rel=0.5)
    assert timer.collect() == []
