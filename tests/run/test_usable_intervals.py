"""Intervals a user can use: bounded ones with ±%, unbounded ones with the fix, disturbed comparisons flagged."""

from __future__ import annotations

import numpy as np

from harness.records import Phase, StepRecord, WindowRecord
from harness.stats import Summary, summarize
from harness.utilization import UtilizationSample, summarize_utilization
from suite.run.diagnosis import diagnose
from suite.run.scaling import scaling
from suite.run.summary import interval_text


def _summary(step_s: list[list[float]], samples: int = 16) -> Summary:
    """The summary of real records: one measurement window per repeat with these step times."""
    steps: list[StepRecord] = []
    windows: list[WindowRecord] = []
    t = 0.0
    for r, times in enumerate(step_s):
        steps.append(StepRecord(r, Phase.WARMUP, 0, t, 0.0, 1.0, samples))
        windows.append(WindowRecord(r, Phase.WARMUP, t, 1.0, 1, samples))
        t += 1.0
        start = t
        for i, s in enumerate(times):
            steps.append(StepRecord(r, Phase.MEASUREMENT, i, t, 0.0, s, samples))
            t += s
        windows.append(WindowRecord(r, Phase.MEASUREMENT, start, t - start, len(times), samples * len(times)))
    return summarize(steps, windows)


def _noisy(n: int, mean: float, sd: float, seed: int) -> list[float]:
    return [float(x) for x in np.random.default_rng(seed).normal(mean, sd, n).clip(mean / 2)]


def test_a_bounded_interval_prints_its_half_width_and_an_unbounded_one_the_fix() -> None:
    tight = _summary([_noisy(15, 1.2, 0.01, 1), _noisy(15, 1.2, 0.01, 2)])
    text = interval_text(tight)
    assert " samples/s (±" in text and "batch means over 2 windows" in text
    assert tight.throughput_ci95_rel is not None and tight.throughput_ci95_rel < 0.02
    few = _summary([[1.0, 1.1, 0.9]])
    assert few.throughput_ci95 is None
    text = interval_text(few)
    assert text.startswith("too few measured steps to bound") and "Fix: raise measure_steps or repeats" in text
    assert " - " not in text  # never a range


def test_scaling_without_bounded_intervals_says_why_instead_of_a_range() -> None:
    ddp, single = _summary([[1.0, 1.1, 0.9]]), _summary([_noisy(12, 1.0, 0.05, 3)])
    fields = scaling(ddp, single)
    assert fields["efficiency_ci95_low"] is None and fields["efficiency_ci95_high"] is None
    reason = str(fields["efficiency_ci95_reason"])
    assert reason.startswith("too few repeats to bound: the DDP run: too few measured steps")
    assert "Fix:" in reason


def test_an_efficiency_above_one_beyond_its_interval_is_a_disturbed_comparison() -> None:
    ddp = _summary([_noisy(15, 1.0, 0.01, 4), _noisy(15, 1.0, 0.01, 5)])
    single = _summary([_noisy(15, 4.5, 0.04, 6), _noisy(15, 4.5, 0.04, 7)])  # the other job took the CPU
    fields = scaling(ddp, single)
    assert float(str(fields["efficiency"])) > 4 and fields["efficiency_ci95_low"] is not None
    assert fields["disturbed"] is True and "above 1 beyond its 95% interval" in str(fields["disturbed_reason"])
    fair = scaling(ddp, _summary([_noisy(15, 1.0, 0.01, 8), _noisy(15, 1.0, 0.01, 9)]))
    assert fair["disturbed"] is False and fair["disturbed_reason"] is None and fair["efficiency_ci95_reason"] is None


def test_a_disturbed_window_reaches_the_verdict_and_the_scaling() -> None:
    windows = [WindowRecord(0, Phase.MEASUREMENT, 0.0, 10.0, 10, 160)]
    busy = [UtilizationSample(t, [100.0, 100.0], 1, 1.0, 1.0, 0.6, 0.0) for t in (2.0, 4.0, 6.0)]  # others: 0.6 cores
    util = summarize_utilization(busy, windows)
    assert util.disturbed
    d = diagnose(0.0, 100.0, util)
    assert d["disturbed"] is True and "DISTURBED: 1 of 1 measurement windows were disturbed" in d["message"]
    quiet = summarize_utilization([UtilizationSample(t, [90.0, 90.0], 1, 1.0, 1.0, 0.0, 0.0) for t in (2.0,)], windows)
    assert diagnose(0.0, 90.0, quiet)["disturbed"] is False and diagnose(0.0, None)["disturbed"] is None
    s = _summary([_noisy(15, 1.0, 0.01, 10), _noisy(15, 1.0, 0.01, 11)])
    fields = scaling(s, s, util, None)
    assert fields["disturbed"] is True and str(fields["disturbed_reason"]).startswith("the DDP run's measurement")
