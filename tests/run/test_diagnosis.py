"""Input-bound verdicts in plain words, and on a GPU which of three limits holds."""

from __future__ import annotations

import pytest

from harness.gpu_telemetry import GpuReading
from harness.records import Phase, StepRecord, WindowRecord
from harness.stats import Summary, summarize
from harness.utilization import UtilizationSample, UtilizationSummary, summarize_utilization
from suite.run.diagnosis import diagnose


def test_verdicts() -> None:
    d = diagnose(0.83, 95.0)
    assert d["verdict"] == "input-bound"
    assert d["message"].startswith("input-bound: 83% of each step waits for data; add loader workers")
    assert d["message"].endswith("CPU 95% busy during measurement")
    assert diagnose(0.2, None)["verdict"] == "partly input-bound"
    assert diagnose(0.01, 50.0)["verdict"] == "compute-bound"
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        diagnose(1.5, None)


# --- on a GPU: which of three limits holds, from constructed records ---------------------------

STEPS = 40


def gpu_run(
    wait_s: float, host_s: float, device_s: float | None, util: float | None
) -> tuple[Summary, UtilizationSummary]:
    """One measurement window of ``STEPS`` steps laid end to end, and NVML readings every 0.25 s inside it."""
    steps = [
        StepRecord(0, Phase.MEASUREMENT, i, i * (wait_s + host_s), wait_s, host_s, 256, 0, device_s)
        for i in range(STEPS)
    ]
    seconds = STEPS * (wait_s + host_s)
    windows = [WindowRecord(0, Phase.MEASUREMENT, 0.0, seconds, STEPS, 256 * STEPS)]
    ticks = [0.25 * k for k in range(int(seconds / 0.25) + 2)]
    readings = [
        UtilizationSample(
            t, [50.0], 1, gpus=None if util is None else [GpuReading(t, "GPU-x", 0, util, energy_j=500 * t)]
        )
        for t in ticks
    ]
    return summarize(steps, windows), summarize_utilization(readings, windows)


def test_a_busy_gpu_is_the_limit() -> None:
    summary, util = gpu_run(wait_s=0.0, host_s=0.05, device_s=0.0495, util=98.0)
    d = diagnose(summary.input_bound_fraction, None, util, summary)
    assert d["verdict"] == "gpu-bound"
    assert d["message"].startswith("GPU-bound: the GPU is busy (NVML: GPU busy 98% of the time;")
    assert "median device step 49.5 ms" in d["message"]
    assert d["gpu_util_percent"] == 98.0 and d["device_busy_fraction"] == pytest.approx(0.99)


def test_a_host_that_cannot_launch_fast_enough_is_the_limit() -> None:
    # no wait for data, the GPU idle 45% of the time, 30 ms of device work in each 50 ms step
    summary, util = gpu_run(wait_s=0.0, host_s=0.05, device_s=0.03, util=55.0)
    d = diagnose(summary.input_bound_fraction, 12.0, util, summary)
    assert d["verdict"] == "host-bound"
    assert d["message"].startswith(
        "host-bound: the host cannot launch work fast enough (NVML: GPU busy 55% of the time"
    )
    assert "the device spent 60% of the wall clock inside steps" in d["message"]
    assert "0% of each step waits for data" in d["message"] and "CUDA graph" in d["message"]
    assert d["message"].endswith("CPU 12% busy during measurement")


def test_the_input_pipeline_is_the_limit_on_a_gpu() -> None:
    summary, util = gpu_run(wait_s=0.06, host_s=0.02, device_s=0.019, util=30.0)
    d = diagnose(summary.input_bound_fraction, None, util, summary)
    assert d["verdict"] == "input-bound"
    assert d["message"].startswith("input-bound: the input pipeline is the limit: 75% of each step waits for data")
    assert "(GPU busy 30% of the time)" in d["message"] and "DALI" in d["message"]
    part, util = gpu_run(wait_s=0.01, host_s=0.04, device_s=0.02, util=40.0)
    assert diagnose(part.input_bound_fraction, None, util, part)["verdict"] == "partly input-bound"


def test_without_nvml_the_device_step_times_decide() -> None:
    busy, util = gpu_run(wait_s=0.0, host_s=0.05, device_s=0.049, util=None)
    assert util.gpu is None
    assert diagnose(0.0, None, util, busy)["verdict"] == "gpu-bound"
    idle, util = gpu_run(wait_s=0.0, host_s=0.05, device_s=0.03, util=None)
    d = diagnose(0.0, None, util, idle)
    assert d["verdict"] == "host-bound" and "NVML" not in d["message"] and d["gpu_util_percent"] is None


def test_a_cpu_run_keeps_its_verdicts() -> None:
    summary, util = gpu_run(wait_s=0.0, host_s=0.05, device_s=None, util=None)
    d = diagnose(summary.input_bound_fraction, 95.0, util, summary)
    assert d["verdict"] == "compute-bound" and d["device_busy_fraction"] is None
    assert d["message"] == "compute-bound: 0% of each step waits for data; CPU 95% busy during measurement"
