"""Utilization sampler (harness.sampler): a real sampler process and the window filter."""

from __future__ import annotations

import os
import time

import psutil
import pytest

from harness.records import Phase, WindowRecord
from harness.sampler import UtilizationSample, UtilizationSampler, summarize_utilization


def busy_while_sampling(sampler: UtilizationSampler, seconds: float, min_readings: int, cap_s: float) -> None:
    """Burn CPU for ``seconds``, longer (up to ``cap_s``) if the sampler thread was starved of readings.

    On a loaded machine the sampler thread can wait long for the GIL; going on until it has a few
    readings keeps the test about the sampler, not about the scheduler.
    """
    start = time.perf_counter()
    x = 0
    while True:
        now = time.perf_counter()
        if now - start >= cap_s or (now - start >= seconds and len(sampler.samples) >= min_readings):
            return
        x += sum(i * i for i in range(500))


def test_real_sampler_reads_every_core_and_rss() -> None:
    origin = time.perf_counter()
    sampler = UtilizationSampler(interval_s=0.05, origin=origin)
    assert sampler.pid is None
    with sampler:
        pid = sampler.pid
        assert pid is not None and psutil.Process(pid).parent().pid == os.getpid()
        busy_while_sampling(sampler, seconds=0.5, min_readings=3, cap_s=5.0)
    elapsed = time.perf_counter() - origin
    readings = sampler.samples
    assert sampler.pid is None and not psutil.pid_exists(pid)  # the sampler process was waited for
    assert sampler._proc is None
    assert sampler._out is None
    assert sampler.error is None
    # about one reading per 0.05 s: at least 3, never more than the interval allows
    assert 3 <= len(readings) <= elapsed / 0.05 + 1
    cores = psutil.cpu_count()
    for r in readings:
        assert len(r.cpu_percent) == cores
        assert all(0.0 <= v <= 100.0 for v in r.cpu_percent)
        assert isinstance(r.rss_bytes, int)
        assert r.rss_bytes > 0
        assert 0.0 < r.t_s <= elapsed
        assert r.machine_cpu_s is not None and r.machine_cpu_s > 0
        assert r.run_cpu_s is not None and r.others_cpu_s is not None and r.steal_s is not None
        assert min(r.run_cpu_s, r.others_cpu_s, r.steal_s) >= 0
    times = [r.t_s for r in readings]
    assert times == sorted(times)
    # this process was busy on one core all along: some core must show real load, and the run's tree used CPU
    assert max(max(r.cpu_percent) for r in readings) > 20.0
    assert sum(r.run_cpu_s or 0.0 for r in readings) > 0.05
    # no readings after stop
    n = len(readings)
    time.sleep(0.15)
    assert len(sampler.samples) == n


def test_stop_returns_the_readings() -> None:
    sampler = UtilizationSampler(interval_s=0.02).start()
    deadline = time.monotonic() + 3.0
    while len(sampler.samples) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    got = sampler.stop()
    assert got is sampler.samples
    assert len(got) >= 2


@pytest.mark.parametrize("interval", [0, -0.5])
def test_interval_must_be_positive(interval: float) -> None:
    with pytest.raises(ValueError, match="interval_s"):
        UtilizationSampler(interval_s=interval)


def sample(t: float, cpus: list[float], rss: int) -> UtilizationSample:
    return UtilizationSample(t_s=t, cpu_percent=cpus, rss_bytes=rss)


def test_summarize_counts_only_readings_inside_measurement_windows() -> None:
    windows = [
        WindowRecord(0, Phase.WARMUP, 0.0, 2.0, 2, 20),
        WindowRecord(0, Phase.MEASUREMENT, 2.0, 3.0, 3, 30),  # (2, 5]
        WindowRecord(1, Phase.WARMUP, 5.0, 2.0, 2, 20),
        WindowRecord(1, Phase.MEASUREMENT, 7.0, 1.0, 1, 10),  # (7, 8]
    ]
    samples = [
        sample(1.0, [100.0, 100.0], 999),  # warm-up: excluded, but its RSS is the run's peak
        sample(2.0, [90.0, 90.0], 10),  # at a measurement window's start: covers warm-up time, excluded
        sample(3.0, [20.0, 40.0], 10),  # inside
        sample(5.0, [30.0, 50.0], 20),  # at the end: inside
        sample(6.0, [0.0, 0.0], 10),  # second warm-up: excluded
        sample(7.5, [40.0, 60.0], 30),  # inside
        sample(9.0, [100.0, 0.0], 10),  # after everything: excluded
    ]
    u = summarize_utilization(samples, windows)
    assert u.samples == 3
    assert u.cpu_per_core_mean_percent == pytest.approx([30.0, 50.0])
    assert u.cpu_mean_percent == pytest.approx(40.0)
    assert u.rss_peak_bytes == 999
    assert u.to_dict()["samples"] == 3


def test_summarize_without_readings_inside() -> None:
    windows = [WindowRecord(0, Phase.MEASUREMENT, 10.0, 1.0, 1, 1)]
    u = summarize_utilization([sample(1.0, [50.0], 7)], windows)
    assert (u.samples, u.cpu_mean_percent, u.cpu_per_core_mean_percent, u.rss_peak_bytes) == (0, None, [], 7)
    empty = summarize_utilization([], windows)
    assert (empty.samples, empty.rss_peak_bytes) == (0, None)


def test_a_sampler_process_that_cannot_start_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    # a Python that cannot import the harness package: no readings, and the error says so
    monkeypatch.setattr("harness.sampler.sys.executable", "/bin/false")
    sampler = UtilizationSampler(interval_s=0.05).start()
    assert sampler.stop() == []
    assert sampler.error == "the sampler process exited with code 1"
