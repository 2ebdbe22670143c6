"""Intervals that decide (issue 34): a run whose 95% CI is wider than +-5% says why and what to change;
an input-bound run with a bursty loader is told to remove the bottleneck or to measure many bursts."""

from __future__ import annotations

import re

from harness.records import Phase, StepRecord, WindowRecord
from harness.stats import Summary, summarize
from suite.run.diagnosis import DECISIVE_CI, interval_advice
from suite.run.summary import loader_batches


def _summary(repeats: int, steps: int, wait: list[float], compute: tuple[float, ...] = (0.1,)) -> Summary:
    """Real records of ``repeats`` windows of ``steps`` steps of 256 samples; step i waits ``wait[i % len(wait)]``
    for data and computes for ``compute[i % len(compute)]`` seconds."""
    samples = 256
    records: list[StepRecord] = []
    windows: list[WindowRecord] = []
    t = 0.0
    for r in range(repeats):
        records.append(StepRecord(r, Phase.WARMUP, 0, t, 0.0, 1.0, samples))
        windows.append(WindowRecord(r, Phase.WARMUP, t, 1.0, 1, samples))
        t += 1.0
        start = t
        for i in range(steps):
            w = wait[(r * 7 + i) % len(wait)]  # each window starts elsewhere in the loader's cycle
            c = compute[i % len(compute)]
            records.append(StepRecord(r, Phase.MEASUREMENT, i, t, w, c, samples))
            t += w + c
        windows.append(WindowRecord(r, Phase.MEASUREMENT, start, t - start, steps, samples * steps))
    return summarize(records, windows)


BURSTS = [2.0] + [0.0] * 29
"""A loader of 15 workers x prefetch 2: a burst of 30 ready batches, then a long wait for the next."""


def test_a_bursty_input_bound_run_says_why_its_interval_is_wide_and_what_to_change() -> None:
    s = _summary(repeats=2, steps=30, wait=BURSTS)
    assert s.input_bound_fraction > 0.1
    assert s.throughput_ci95_rel is None or s.throughput_ci95_rel > DECISIVE_CI
    advice = interval_advice(s, loader_batches({"input_pipeline": "dataloader", "num_workers": 15, "prefetch": 2}))
    assert advice is not None and advice.startswith("not decisive (")
    assert "the steps wait for data unevenly" in advice and "remove the input bottleneck first" in advice
    assert "(the loader holds 30 batches in flight): --set measure_steps=600 --set repeats=5" in advice
    plain = interval_advice(s)  # the loader unknown: the 1/sqrt rule on measured time
    assert plain is not None and "the steps wait for data unevenly" in plain
    if s.throughput_ci95_rel is not None:
        m = re.search(r"--set measure_seconds=(\d+)", plain)
        assert m is not None and int(m.group(1)) > s.measured_seconds / 2


def test_windows_of_many_bursts_give_a_decisive_interval_and_no_advice() -> None:
    """The advice works: the same loader in 5 windows of 600 steps (20 of its cycles) is within +-5%."""
    s = _summary(repeats=5, steps=600, wait=BURSTS)
    assert s.throughput_ci95_rel is not None and s.throughput_ci95_rel <= DECISIVE_CI
    assert interval_advice(s, 30) is None


def test_a_compute_bound_run_with_varying_steps_is_told_to_measure_longer() -> None:
    assert interval_advice(_summary(repeats=1, steps=8, wait=[0.0])) is None  # identical steps: a point interval
    noisy = _summary(repeats=1, steps=8, wait=[0.0], compute=(0.1, 0.1, 0.1, 0.5, 0.1, 0.3, 0.1))
    advice = interval_advice(noisy)
    assert advice is not None and "the step times vary (step-time CV" in advice
    assert "run on a quiet machine; measure about" in advice


def test_loader_batches_from_the_params_of_each_workload() -> None:
    assert loader_batches({"input_pipeline": "dataloader", "num_workers": 15, "prefetch": 4}) == 60
    assert loader_batches({"data": "imagefolder", "num_workers": 3}) == 6  # resnet50-cpu: torch's prefetch of 2
    assert loader_batches({"input_pipeline": "dali", "num_workers": 15}) is None
    assert loader_batches({"input_pipeline": "dataloader", "num_workers": 0}) is None
