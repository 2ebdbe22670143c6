"""Offloaded preprocessing on a real tf.data service on loopback: a dispatcher and workers as separate processes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from suite.datasets.service import LocalService
from suite.results import read_result
from tests.conftest import trainbench
from tests.mnist.test_runs import TINY


@pytest.mark.slow
def test_training_reads_batches_preprocessed_by_two_pinned_workers(tmp_path: Path, store_uri: str) -> None:
    cpus = sorted(os.sched_getaffinity(0))
    pins = [str(cpus[0]), str(cpus[-1])]
    with LocalService(pins, tmp_path / "service") as service:
        assert [c for _, c in service.workers] == [[int(p)] for p in pins]
        proc = trainbench(
            "run", "mnist-dataheavy", *TINY, "--set", "input_pipeline=tfdata-service",
            "--set", f"data_service={service.address}", "--set", "preprocess_repeats=2",
            "--output-dir", str(tmp_path / "out"), "--tracking-uri", store_uri, cwd=tmp_path,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr + proc.stdout
        worker_pids = set(service.worker_pids)
    [path] = sorted((tmp_path / "out").rglob("result.json"))
    result = read_result(path)
    prep = result.workload_info["preprocessing"]
    assert prep["engine"] == "tf.data service" and prep["dispatcher"] == service.address
    assert prep["placement"] == "remote (loopback)" and prep["workers"] == 2
    assert {p["pid"] for p in prep["producers"]} == worker_pids  # the batches came from the workers
    assert sorted(tuple(p["cpus"]) for p in prep["producers"]) == sorted((int(p),) for p in pins)
    assert prep["cores"] == len(set(pins)) and prep["cpu_ms_per_sample"] > 0
    assert result.summary is not None and result.summary.measured_samples == 4 * result.summary.measured_steps
    assert "preprocessing" in proc.stdout and "tf.data service" in proc.stdout
    client = MlflowClient(tracking_uri=store_uri)
    exp = client.get_experiment_by_name("mnist-dataheavy")
    assert exp is not None
    [run] = client.search_runs([exp.experiment_id])
    assert run.data.metrics["preprocess_workers"] == 2
    assert run.data.tags["trainbench.preprocessing"].startswith("tf.data service: tf.data service worker processes")


@pytest.mark.slow
def test_a_dispatcher_without_workers_fails_clearly(tmp_path: Path) -> None:
    with LocalService([], tmp_path / "service") as service:
        proc = trainbench(
            "run", "mnist-dataheavy", *TINY, "--set", "input_pipeline=tfdata-service",
            "--set", f"data_service={service.address}", "--set", "service_timeout_s=5", "--no-tracking",
            "--output-dir", str(tmp_path / "out"), cwd=tmp_path,
        )  # fmt: skip
    assert proc.returncode == 1
    assert f"no batch arrived from the tf.data service at {service.address} within 5 s" in proc.stderr


def test_an_unreachable_dispatcher_fails_clearly(tmp_path: Path) -> None:
    proc = trainbench(
        "run", "mnist-dataheavy", *TINY, "--set", "input_pipeline=tfdata-service",
        "--set", "data_service=127.0.0.1:9", "--set", "service_timeout_s=1", "--no-tracking",
        "--output-dir", str(tmp_path / "out"), cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 1
    assert "no tf.data service dispatcher answers at 127.0.0.1:9" in proc.stderr
    assert "trainbench data-service dispatcher --port 9" in proc.stderr


@pytest.mark.slow
def test_local_tfdata_without_workers_or_prefetch_runs_inside_next(tmp_path: Path) -> None:
    """tf.data in the trainer with num_workers=0, prefetch=0: heavy preprocessing is all data wait (input-bound)."""
    proc = trainbench(
        "run", "mnist-dataheavy", *TINY, "--set", "input_pipeline=tfdata", "--set", "num_workers=0",
        "--set", "prefetch=0", "--set", "preprocess_repeats=24", "--no-tracking",
        "--output-dir", str(tmp_path / "out"), cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr + proc.stdout
    [path] = sorted((tmp_path / "out").rglob("result.json"))
    result = read_result(path)
    prep = result.workload_info["preprocessing"]
    assert prep["engine"] == "tf.data" and prep["placement"] == "trainer"
    [producer] = prep["producers"]
    assert producer["host"] == os.uname().nodename
    assert result.summary is not None and result.summary.input_bound_fraction >= 0.5
    assert result.diagnosis is not None and result.diagnosis.verdict == "input-bound"


def test_data_service_commands_refuse_bad_input(tmp_path: Path) -> None:
    bad_address = trainbench("data-service", "worker", "--dispatcher", "nohost", cwd=tmp_path)
    assert bad_address.returncode == 2 and "must be HOST:PORT" in bad_address.stderr
    bad_cpus = trainbench("data-service", "dispatcher", "--cpus", "4096", cwd=tmp_path)
    assert bad_cpus.returncode == 2 and "may use CPUs" in bad_cpus.stderr
