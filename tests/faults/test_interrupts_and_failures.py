"""Interrupts and workload failures: a clear message, a non-zero exit, an incomplete result, MLflow KILLED/FAILED."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import psutil
import pytest
from mlflow.tracking import MlflowClient

from suite.results import read_result
from tests.conftest import TINY_RUN, trainbench
from tests.faults.helpers import rank_process, start_run, wait_for_measurement


def _kept(tmp_path: Path) -> Path:
    assert not list((tmp_path / "o").rglob("result.json")), "a failed run must not leave a valid result"
    [kept] = list((tmp_path / "o").rglob("result-incomplete.json"))
    result = read_result(kept)
    assert result.status == "incomplete" and result.summary is None and result.cost is None
    return kept


def _mlflow_status(uri: str) -> str:
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("resnet50-cpu")
    assert exp is not None
    [run] = client.search_runs([exp.experiment_id])
    return str(run.info.status)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_stops_the_run_within_seconds_and_keeps_the_steps(
    tmp_path: Path, store_uri: str, sig: signal.Signals
) -> None:
    run = start_run(tmp_path, "--set", "measure_seconds=600", tracking=["--tracking-uri", store_uri])
    wait_for_measurement(tmp_path)
    t0 = time.monotonic()
    run.send_signal(sig)
    _, stderr = run.communicate(timeout=60)
    assert time.monotonic() - t0 < 30
    assert run.returncode == 130, stderr
    assert "interrupted" in stderr
    assert len(read_result(_kept(tmp_path)).steps) >= 2
    assert _mlflow_status(store_uri) == "KILLED"


def test_nan_loss_fails_the_run(tmp_path: Path, store_uri: str) -> None:
    proc = trainbench(
        "run",
        "resnet50-cpu",
        *TINY_RUN,
        "--set",
        "lr=1e12",
        "--set",
        "momentum=0.9",
        "--set",
        "precision=fp32",
        "--set",
        "channels_last=false",
        "--set",
        "measure_steps=20",
        "--output-dir",
        str(tmp_path / "o"),
        "--tracking-uri",
        store_uri,
        cwd=tmp_path,
    )
    assert proc.returncode == 1, proc.stderr
    assert "NonFiniteLossError" in proc.stderr and "the run is invalid" in proc.stderr
    assert "result-incomplete.json" in proc.stderr
    _kept(tmp_path)
    assert _mlflow_status(store_uri) == "FAILED"


def test_out_of_memory_fails_clearly(tmp_path: Path, store_uri: str) -> None:
    proc = trainbench(
        "run",
        "resnet50-cpu",
        *TINY_RUN,
        "--set",
        "memory_limit_mb=6000",
        "--set",
        "batch_size=256",
        "--set",
        "image_size=224",
        "--output-dir",
        str(tmp_path / "o"),
        "--tracking-uri",
        store_uri,
        cwd=tmp_path,
    )
    assert proc.returncode == 1, proc.stderr
    assert "out of memory" in proc.stderr and "Lower batch_size" in proc.stderr
    _kept(tmp_path)
    assert _mlflow_status(store_uri) == "FAILED"


def test_dataloader_worker_crash_fails_the_run(tmp_path: Path, store_uri: str) -> None:
    run = start_run(
        tmp_path, "--set", "num_workers=1", "--set", "measure_seconds=600", tracking=["--tracking-uri", store_uri]
    )
    wait_for_measurement(tmp_path)
    # the rank's children: its DataLoader worker and the utilization sampler (python -m harness.procstat)
    workers = [c for c in rank_process(run).children() if "harness.procstat" not in " ".join(c.cmdline())]
    assert workers, "num_workers=1 must start a DataLoader worker process"
    workers[0].kill()
    _, stderr = run.communicate(timeout=120)
    assert run.returncode == 1, stderr
    assert "DataLoader worker" in stderr
    assert len(read_result(_kept(tmp_path)).steps) >= 2
    assert _mlflow_status(store_uri) == "FAILED"


def test_dead_rank_is_reported_and_its_steps_rebuilt_from_the_log(tmp_path: Path, store_uri: str) -> None:
    run = start_run(tmp_path, "--set", "measure_seconds=600", tracking=["--tracking-uri", store_uri])
    wait_for_measurement(tmp_path)
    rank_process(run).kill()
    _, stderr = run.communicate(timeout=60)
    assert run.returncode == 1, stderr
    assert "killed by SIGKILL" in stderr and "out-of-memory killer" in stderr
    result = read_result(_kept(tmp_path))
    assert len(result.steps) >= 2 and result.environment["cpu"]["logical_cores"] >= 1
    assert _mlflow_status(store_uri) == "FAILED"


def test_hung_rank_is_killed_after_the_stall_timeout(tmp_path: Path, store_uri: str) -> None:
    run = start_run(
        tmp_path, "--set", "measure_seconds=600", "--set", "stall_timeout_s=4", tracking=["--tracking-uri", store_uri]
    )
    wait_for_measurement(tmp_path)
    rank = rank_process(run)
    rank.suspend()  # SIGSTOP: alive but making no progress
    t0 = time.monotonic()
    _, stderr = run.communicate(timeout=60)
    assert 3 < time.monotonic() - t0 < 30
    assert run.returncode == 1, stderr
    assert "killed as hung" in stderr
    assert not psutil.pid_exists(rank.pid) or rank.status() == psutil.STATUS_ZOMBIE
    assert len(read_result(_kept(tmp_path)).steps) >= 1
    assert _mlflow_status(store_uri) == "FAILED"
