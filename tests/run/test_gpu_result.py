"""A GPU run's result, from constructed raw records through the real ``build_result``: device step times,
NVML readings and samples per joule in the result, the printed table, the validator's recomputation and
MLflow (a real SQLite store). The records are hand-built (CI has no GPU); the real path is the ``gpu``
test in tests/workloads/test_resnet50_gpu.py."""

from __future__ import annotations

import io
import uuid
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient
from rich.console import Console

from harness.system import capture_system
from suite.launchers import LaunchPlan
from suite.results import Result
from suite.run.assemble import build_result
from suite.run.options import RunOptions
from suite.run.summary import summary_table
from suite.specs import resolve
from suite.tracking import log_result
from suite.validation.conditions import check_energy
from suite.validation.findings import Findings
from suite.validation.hardware_claims import check_device_telemetry
from suite.validation.record_checks import check_records, check_summary
from tests.validation.synthetic import forged
from workloads.measurement import RankMeasurement

STEPS, BATCH = 40, 256


def gpu_measurement(device_s: float = 0.049, host: tuple[float, ...] = (0.01, 0.01, 0.01, 0.17)) -> dict[str, Any]:
    """A one-repeat rank measurement: host launch times that swing around a steady 49 ms device step,
    and NVML readings every 0.25 s (a 700 W board's counter, 98% utilization)."""
    steps: list[dict[str, Any]] = []
    windows: list[dict[str, Any]] = []
    t = 0.0
    for phase, n in (("warmup", 4), ("measurement", STEPS)):
        start = t
        for i in range(n):
            h = host[i % len(host)]
            steps.append(
                {
                    "repeat": 0,
                    "phase": phase,
                    "index": i,
                    "start_s": t,
                    "data_wait_s": 0.0,
                    "compute_s": h,
                    "samples": BATCH,
                    "device_s": device_s,
                }
            )
            t += h  # the host's launches follow one another; the device's queue evens them out
        windows.append(
            {"repeat": 0, "phase": phase, "start_s": start, "seconds": t - start, "steps": n, "samples": BATCH * n}
        )
    readings = []
    for k in range(int(t / 0.25) + 2):
        at = 0.25 * k
        gpu = {"t_s": at, "uuid": "GPU-1", "index": 0, "util_percent": 98.0, "power_w": 650.0, "energy_j": 650.0 * at}
        gpu |= {"sm_clock_mhz": 1980.0, "temperature_c": 61.0, "memory_used_bytes": 40 << 30, "clock_event_reasons": 4}
        readings.append({"t_s": at, "cpu_percent": [30.0, 20.0], "rss_bytes": 1 << 30, "gpus": [gpu]})
    info = {"device": "cuda:0", "per_rank_batch_size": BATCH, "world_size": 1, "wrapper": "none"}
    return {"complete": True, "steps": steps, "windows": windows, "utilization": readings, "workload_info": info}


def gpu_result(tmp_path: Path, raw: dict[str, Any] | None = None) -> Result:
    windows = ["measure_seconds=0", "warmup_seconds=0", "warmup_steps=4", f"measure_steps={STEPS}", "repeats=1"]
    config = resolve("resnet50-gpu-horovod", "quick", windows)
    opts = RunOptions(output_dir=tmp_path, tracking_uri=None, system="h100-box", price_per_hour=3.0)
    m = RankMeasurement.model_validate({**(raw or gpu_measurement()), "system": capture_system()})
    return build_result(config, opts, m, LaunchPlan(command=["python"]), uuid.uuid4().hex)


def test_the_result_carries_device_step_times_nvml_and_samples_per_joule(tmp_path: Path) -> None:
    r = gpu_result(tmp_path)
    s, u = r.summary, r.utilization_summary
    assert s is not None and u is not None and u.gpu is not None and r.diagnosis is not None
    assert s.step_time_source == "device" and s.step_time_median_s == pytest.approx(0.049) and s.step_time_cv < 1e-9
    assert s.host_step_time_cv is not None and s.host_step_time_cv > 1.0  # the host's swing, kept apart
    assert s.device_busy_fraction == pytest.approx(0.98)
    measured = BATCH * STEPS
    assert u.gpu.energy_j == pytest.approx(650.0 * STEPS * 0.05)
    assert u.gpu.samples_per_joule == pytest.approx(measured / (650.0 * STEPS * 0.05))
    assert u.gpu.clock_event_reasons == {"sw_power_cap": 1.0}
    assert r.diagnosis.verdict == "gpu-bound" and r.diagnosis.gpu_util_percent == 98.0
    findings = Findings()
    check_summary(r, "r", findings, check_records(r, "r", findings))
    assert [f.message for f in findings] == []


def test_the_table_prints_the_gpu_step_time_the_host_apart_and_samples_per_joule(tmp_path: Path) -> None:
    out = io.StringIO()
    Console(file=out, width=400, color_system=None).print(summary_table(gpu_result(tmp_path)))
    text = out.getvalue()
    assert "step time (GPU)" in text and "median 49.0 ms" in text and "(CUDA events around each step)" in text
    assert "host launch time" in text
    assert "1 GPU: busy 98% (NVML utilization), 650 W mean, SM clock 1,980 MHz, 40.0 GiB used at most" in text
    assert "clock events: sw_power_cap 100% of readings" in text
    assert "7.88 samples/J: 1,300 J over the measurement windows (NVML total-energy counter" in text
    assert "samples/$" in text and "GPU-bound: the GPU is busy" in text


def test_the_validator_recomputes_device_times_and_energy(tmp_path: Path) -> None:
    r = gpu_result(tmp_path)
    for change, field in (
        ({"summary.step_time_median_s": 0.04}, "step_time_median_s"),
        ({"summary.host_step_time_cv": 0.01}, "host_step_time_cv"),
        ({"summary.step_time_source": "host"}, "step_time_source"),
    ):
        findings = Findings()
        bad = forged(r, **change)
        check_summary(bad, "r", findings, check_records(bad, "r", findings))
        assert [f.where for f in findings if f.code == "summary-mismatch"] == [f"r#summary/{field}"]
    doc = r.model_dump(mode="json")
    doc["steps"][-1]["device_s"] = 5.0  # longer than its window: not physically possible on one stream
    bad = forged(Result.model_validate(doc))
    findings = Findings()
    assert not check_records(bad, "r", findings)
    assert any("its steps' device times take" in f.message for f in findings)
    findings = Findings()
    check_energy(forged(r, **{"utilization_summary.gpu.samples_per_joule": 20.0}), "r", findings)
    assert [f.where for f in findings] == ["r#utilization_summary/gpu/samples_per_joule"]
    findings = Findings()
    check_energy(r, "r", findings)
    assert list(findings) == []


def test_a_gpu_run_without_its_device_telemetry_is_refused(tmp_path: Path) -> None:
    """Issue 35's device check, wired to issue 37's fields: every measured step timed on the GPU, and NVML
    readings in every measurement window unless the sampler recorded why NVML could not be read."""
    r = gpu_result(tmp_path)
    findings = Findings()
    check_device_telemetry(r, "r", findings)
    assert list(findings) == []
    doc = r.model_dump(mode="json")
    for step in doc["steps"]:
        step["device_s"] = None  # a forger drops the device clock to hide a host-side figure
    findings = Findings()
    check_device_telemetry(forged(Result.model_validate(doc)), "r", findings)
    assert [(f.code, f.where) for f in findings] == [("device-telemetry-missing", "r#steps")]
    doc = r.model_dump(mode="json")
    for reading in doc["utilization"]:
        reading["gpus"] = None
    findings = Findings()
    check_device_telemetry(forged(Result.model_validate(doc)), "r", findings)
    assert [(f.code, f.where) for f in findings] == [("device-telemetry-missing", "r#utilization")]
    doc["utilization"][0]["gpu_error"] = "NVML unavailable: driver not loaded"  # said, so not a forgery
    findings = Findings()
    check_device_telemetry(forged(Result.model_validate(doc)), "r", findings)
    assert list(findings) == []


def test_mlflow_gets_samples_per_joule_the_host_times_and_each_gpu_reading(tmp_path: Path) -> None:
    from suite.results import write_result

    r = gpu_result(tmp_path)
    path = write_result(r, tmp_path / "result.json")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    rid = log_result(r, path, [], uri)
    client = MlflowClient(tracking_uri=uri)
    metrics = client.get_run(rid).data.metrics
    assert r.utilization_summary is not None and r.utilization_summary.gpu is not None
    assert metrics["samples_per_joule"] == pytest.approx(r.utilization_summary.gpu.samples_per_joule, rel=1e-6)
    assert metrics["samples_per_dollar"] > 0 and metrics["gpu_util_mean_percent"] == 98.0
    assert metrics["device_busy_fraction"] == pytest.approx(0.98, rel=1e-6) and "host_step_time_cv" in metrics
    assert metrics["system/gpu_0_power_usage_watts"] == 650.0
    history = client.get_metric_history(rid, "step_device_time_s")
    assert len(history) == STEPS and {m.value for m in history} == {0.049}
    exp = client.get_experiment(client.get_run(rid).info.experiment_id)
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"
