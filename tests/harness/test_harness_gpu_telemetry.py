"""GPU telemetry: the sampler without NVML (every CI run), the per-window figures and energy derived
from raw readings, and real NVML on a GPU host (marked ``gpu``).

The summaries are computed from hand-built readings, as the CPU utilization's are: raw records
in, figures out. Nothing here pretends to be NVML; NVML itself is exercised only where a real
driver answers.
"""

from __future__ import annotations

import time

import pytest

from harness.gpu_telemetry import COUNTER, INTEGRAL, GpuReading, at, reasons_share, summarize_gpu
from harness.records import Phase, WindowRecord
from harness.sampler import UtilizationSample, UtilizationSampler, cuda_devices_in_use, summarize_utilization

M, W = Phase.MEASUREMENT, Phase.WARMUP


def reading(
    t: float, energy: float | None, power: float | None = 300.0, uuid: str = "GPU-a", **kw: object
) -> GpuReading:
    return GpuReading(t_s=t, uuid=uuid, index=0, energy_j=energy, power_w=power, **kw)  # type: ignore[arg-type]


def test_a_cpu_run_samples_no_gpu_and_never_loads_nvml() -> None:
    assert cuda_devices_in_use() == []  # torch may be imported here, but no CUDA was initialised
    sampler = UtilizationSampler(interval_s=0.05).start()
    assert sampler.gpus == []
    time.sleep(0.3)
    got = sampler.stop()
    assert got and all(s.gpus is None and s.gpu_error is None for s in got)
    assert sampler.gpu_error is None
    windows = [WindowRecord(0, M, 0.0, 1e9, 1, 1)]
    u = summarize_utilization(got, windows)
    assert u.gpu is None and u.gpu_error is None


def test_the_sampler_says_why_it_cannot_read_a_gpu_and_goes_on_with_the_cpu() -> None:
    origin = time.perf_counter()
    sampler = UtilizationSampler(interval_s=0.05, origin=origin, gpus=["GPU-00000000-0000-0000-0000-000000000000"])
    with sampler:
        time.sleep(0.3)
        stopping = time.perf_counter() - origin
    got = sampler.samples
    # a real pynvml without a driver ("NVML unavailable: ..."), without nvidia-ml-py, or a host whose GPUs
    # have other UUIDs: each is said in words, never a traceback
    assert sampler.gpu_error is not None
    assert any(why in sampler.gpu_error for why in ("NVML unavailable", "not installed", "no GPU with UUID"))
    assert got[0].gpu_error == sampler.gpu_error and all(s.gpu_error is None for s in got[1:])
    assert all(s.cpu_percent for s in got)
    if "no GPU with UUID" not in sampler.gpu_error:  # a GPU host still reads the GPUs this process uses
        assert all(s.gpus is None for s in got)
    assert got[-1].t_s >= stopping  # the last reading is taken when the sampler stops
    u = summarize_utilization(got, [WindowRecord(0, M, 0.0, 0.1, 1, 1)])
    assert u.gpu is None and u.gpu_error == sampler.gpu_error


def test_energy_from_the_counter_is_interpolated_to_the_window_edges() -> None:
    # the counter rises 300 J per second; readings every 0.5 s from t=0 to t=4
    readings = [reading(0.5 * i, 1000.0 + 150.0 * i, util_percent=90.0 + i % 2) for i in range(9)]
    windows = [WindowRecord(0, W, 0.0, 1.2, 2, 64), WindowRecord(0, M, 1.2, 2.2, 10, 640)]  # (1.2, 3.4]
    g = summarize_gpu(readings, windows)
    assert g is not None and g.energy_method == COUNTER and g.note is None
    (win,) = g.windows
    assert win.energy_j == pytest.approx(300.0 * 2.2)
    assert win.samples == 640 and win.samples_per_joule == pytest.approx(640 / 660.0)
    assert g.samples_per_joule == pytest.approx(640 / 660.0) and g.energy_j == pytest.approx(660.0)
    assert win.readings == 4  # t = 1.5, 2.0, 2.5, 3.0
    assert win.util_mean_percent == pytest.approx((91 + 90 + 91 + 90) / 4)
    assert g.gpus == ["GPU-a"]


def test_without_a_counter_energy_is_the_integral_of_power() -> None:
    # power ramps 100 W -> 300 W over 2 s (trapezoid exact for a ramp): 400 J from 0 to 2
    readings = [reading(0.5 * i, None, power=100.0 + 50.0 * i) for i in range(5)]
    g = summarize_gpu(readings, [WindowRecord(0, M, 0.0, 2.0, 4, 80)])
    assert g is not None and g.energy_method == INTEGRAL
    assert g.energy_j == pytest.approx(400.0) and g.samples_per_joule == pytest.approx(0.2)
    assert g.power_mean_w == pytest.approx((150 + 200 + 250 + 300) / 4)


def test_a_window_the_readings_do_not_bracket_has_no_energy_and_the_note_says_why() -> None:
    readings = [reading(1.0 + 0.5 * i, 100.0 * i) for i in range(4)]  # 1.0 .. 2.5
    g = summarize_gpu(readings, [WindowRecord(0, M, 0.5, 1.0, 2, 20), WindowRecord(1, M, 1.6, 0.5, 2, 20)])
    assert g is not None
    assert [w.energy_j for w in g.windows] == [None, pytest.approx(100.0)]
    assert g.energy_j is None and g.samples_per_joule is None and g.note and "no readings bracket it" in g.note


def test_samples_per_joule_needs_every_ranks_gpu() -> None:
    readings = [reading(0.5 * i, 100.0 * i) for i in range(5)]
    windows = [WindowRecord(0, M, 0.5, 1.0, 2, 20, rank=0), WindowRecord(0, M, 0.5, 1.0, 2, 20, rank=1)]
    g = summarize_gpu(readings, windows)
    assert g is not None and g.energy_j == pytest.approx(200.0) and g.samples_per_joule is None
    assert g.note == "energy of 1 GPU(s) for 2 ranks: samples per joule needs every rank's GPU"
    two = readings + [reading(r.t_s, r.energy_j, uuid="GPU-b") for r in readings]
    both = summarize_gpu(two, windows)
    assert both is not None and both.energy_j == pytest.approx(400.0) and both.samples_per_joule == pytest.approx(0.1)


def test_clock_event_reasons_are_named_with_the_share_of_readings() -> None:
    rs = [reading(float(i), None, clock_event_reasons=m) for i, m in enumerate([0x0, 0x4, 0x4 | 0x40, 0x1])]
    assert reasons_share(rs) == {"gpu_idle": 0.25, "sw_power_cap": 0.5, "hw_thermal_slowdown": 0.25}


def test_interpolation_is_linear_and_refuses_to_extrapolate() -> None:
    assert at([0.0, 2.0], [10.0, 30.0], 0.5) == 15.0
    assert at([0.0, 2.0], [10.0, 30.0], 2.0) == 30.0
    assert at([0.0, 2.0], [10.0, 30.0], 2.5) is None and at([], [], 0.0) is None


def test_gpu_readings_travel_in_the_utilization_samples() -> None:
    gpus = [reading(0.5 * i, 50.0 * i) for i in range(5)]
    samples = [UtilizationSample(0.5 * i, [50.0], 10, gpus=[g]) for i, g in enumerate(gpus)]
    u = summarize_utilization(samples, [WindowRecord(0, M, 0.5, 1.0, 2, 20)])
    assert u.gpu is not None and u.gpu.energy_j == pytest.approx(100.0) and u.gpu.samples_per_joule == 0.2
    assert UtilizationSample(**{**samples[0].__dict__}).to_dict()["gpus"][0]["energy_j"] == 0.0


@pytest.mark.gpu
def test_real_nvml_reads_the_gpu_this_process_works_on() -> None:
    import torch

    from harness.nvml import NvmlReader

    a = torch.randn(8192, 8192, device="cuda")
    torch.cuda.synchronize()
    (uuid,) = cuda_devices_in_use()
    reader = NvmlReader([uuid])  # CUDA's spelling of the UUID, matched to NVML's
    assert reader.unknown is None, reader.unknown
    try:
        (name,) = reader.gpus
        first = reader.read()[0]
        end = time.perf_counter() + 2.0
        while time.perf_counter() < end:
            a = (a @ a).tanh()
        torch.cuda.synchronize()
        last = reader.read()[0]
    finally:
        reader.close()
    assert name.startswith("GPU-") and first["uuid"] == name
    assert last["memory_used_bytes"] >= 8192 * 8192 * 4
    assert last["power_w"] > 0 and last["temperature_c"] > 0 and last["sm_clock_mhz"] > 0
    assert last["util_percent"] > 50  # two seconds of matrix products
    if first["energy_j"] is not None:  # Volta and newer
        assert last["energy_j"] - first["energy_j"] > 2.0 * 10  # at least 10 W for 2 s


@pytest.mark.gpu
def test_a_sampler_beside_real_gpu_work_gives_samples_per_joule() -> None:
    import torch

    torch.zeros(1, device="cuda")
    origin = time.perf_counter()
    with UtilizationSampler(interval_s=0.1, origin=origin) as sampler:
        a = torch.randn(8192, 8192, device="cuda")
        time.sleep(0.3)
        start = time.perf_counter() - origin
        for _ in range(200):
            a = (a @ a).tanh()
        torch.cuda.synchronize()
        seconds = time.perf_counter() - origin - start
    assert sampler.gpu_error is None, sampler.gpu_error
    u = summarize_utilization(sampler.samples, [WindowRecord(0, M, start, seconds, 200, 200)])
    assert u.gpu is not None and u.gpu.samples_per_joule is not None, u.gpu
    assert u.gpu.windows[0].util_mean_percent is not None and u.gpu.windows[0].util_mean_percent > 50
