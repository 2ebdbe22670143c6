"""Real runs of a tiny ResNet-50 through the installed CLI, checked in the result file and in MLflow."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest
from mlflow.tracking import MlflowClient

from suite.launchers.allocators import find_library
from suite.results import SCHEMA_PATH, read_result
from tests.conftest import TINY_RUN, trainbench


def _result_files(root: Path, name: str = "result.json") -> list[Path]:
    return sorted(root.rglob(name))


def test_tiny_run_writes_valid_result_and_mlflow_run(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    uri = f"sqlite:///{db}"
    proc = trainbench(
        "run",
        "resnet50-cpu",
        *TINY_RUN,
        "--set",
        "omp_num_threads=1",
        "--output-dir",
        str(tmp_path / "out"),
        "--tracking-uri",
        uri,
        "--price-per-hour",
        "0.5",
        "--system",
        "test-box",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "samples/s" in proc.stdout and "make ui" in proc.stdout
    [path] = _result_files(tmp_path / "out")
    doc = json.loads(path.read_text())
    jsonschema.validate(doc, json.loads(SCHEMA_PATH.read_text()))
    result = read_result(path)  # schema + digest
    assert result.status == "complete" and result.system == "test-box" and result.division == "open"
    assert result.config.params["batch_size"] == 2
    s = result.summary
    assert s is not None and s.measured_steps >= 3 and s.measured_samples == 2 * s.measured_steps
    assert s.throughput == pytest.approx(s.measured_samples / s.measured_seconds)
    assert result.cost is not None and result.cost.samples_per_dollar == pytest.approx(s.throughput * 3600 / 0.5)
    env = result.environment
    assert env["cpu"]["logical_cores"] >= 1 and env["torch"]["num_threads"] >= 1
    # the launch setting reached the rank's environment and torch's thread pool, read back from the rank
    assert env["env"]["OMP_NUM_THREADS"] == "1" and env["torch"]["num_threads"] == 1
    assert result.workload_info["parameters"] > 20_000_000  # a real ResNet-50 (25.6M parameters)
    assert (path.parent / "timeline.png").stat().st_size > 10_000

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("resnet50-cpu")
    assert exp is not None
    [run] = client.search_runs([exp.experiment_id])
    assert run.info.status == "FINISHED"
    assert run.data.params["params.batch_size"] == "2"
    assert run.data.params["windows.measure_steps"] == "3"
    assert run.data.metrics["throughput_samples_per_s"] == pytest.approx(s.throughput)
    assert run.data.metrics["samples_per_dollar"] == pytest.approx(result.cost.samples_per_dollar)
    history = client.get_metric_history(run.info.run_id, "step_throughput_samples_per_s")
    assert sorted(m.step for m in history) == list(range(s.measured_steps))
    assert run.data.tags["trainbench.system"] == "test-box"
    assert run.data.tags["trainbench.runtime"] == "local"
    assert run.data.tags["trainbench.digest"] == result.digest
    assert run.data.tags["trainbench.cpu_model"] == str(env["cpu"]["model"])
    assert run.data.tags["trainbench.verdict"] in {"compute-bound", "partly input-bound", "input-bound"}
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"result.json", "environment.json", "timeline.png"} <= artifacts


def test_bad_config_fails_before_anything_runs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = trainbench(
        "run", "resnet50-cpu", "--set", "batch_size=-1", "--output-dir", str(out), "--no-tracking", cwd=tmp_path
    )
    assert proc.returncode == 2
    assert "batch_size" in proc.stderr and "greater than or equal to 1" in proc.stderr
    assert not out.exists()
    proc = trainbench(
        "run", "resnet50-cpu", "--set", "measure_stepz=5", "--output-dir", str(out), "--no-tracking", cwd=tmp_path
    )
    assert proc.returncode == 2 and "unknown setting" in proc.stderr and "measure_steps" in proc.stderr
    proc = trainbench("run", "resnet50-gpu", "--output-dir", str(out), "--no-tracking", cwd=tmp_path)
    assert proc.returncode == 2 and "valid workloads: mnist-dataheavy, numa-ddp, resnet50-cpu" in proc.stderr
    proc = trainbench(
        "run",
        "resnet50-cpu",
        "--instance-type",
        "no.such.type",
        "--output-dir",
        str(out),
        "--no-tracking",
        cwd=tmp_path,
    )
    assert proc.returncode == 2 and "c7i.2xlarge" in proc.stderr
    assert not out.exists() or not list(out.rglob("*.json"))
    assert not (tmp_path / "mlflow.db").exists()


@pytest.mark.skipif(find_library("libjemalloc.so.2") is None, reason="libjemalloc2 is not installed")
def test_jemalloc_is_preloaded_and_read_back(tmp_path: Path) -> None:
    proc = trainbench(
        "run",
        "resnet50-cpu",
        *TINY_RUN,
        "--set",
        "allocator=jemalloc",
        "--set",
        "omp_num_threads=1",
        "--output-dir",
        str(tmp_path),
        "--no-tracking",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    [path] = _result_files(tmp_path)
    env = read_result(path).environment
    assert env["loaded_libraries"]["jemalloc"], "jemalloc must be mapped into the rank process"
    assert "libjemalloc.so.2" in env["env"]["LD_PRELOAD"]
    assert env["env"]["MALLOC_CONF"].startswith("oversize_threshold")
    assert env["env"]["OMP_NUM_THREADS"] == "1" and env["torch"]["num_threads"] == 1


def test_run_cpu_launcher(tmp_path: Path) -> None:
    proc = trainbench(
        "run",
        "resnet50-cpu",
        *TINY_RUN,
        "--set",
        "launcher=run_cpu",
        "--output-dir",
        str(tmp_path),
        "--no-tracking",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    [path] = _result_files(tmp_path)
    result = read_result(path)
    assert result.runtime.launcher == "run_cpu"
    assert "torch.backends.xeon.run_cpu" in result.runtime.command
    assert "OMP_NUM_THREADS" in result.environment["env"]  # set by run_cpu, read back in the rank


def test_imagefolder_of_real_jpegs(tmp_path: Path, jpeg_folder: Path) -> None:
    proc = trainbench(
        "run",
        "resnet50-cpu",
        *TINY_RUN,
        "--set",
        "data=imagefolder",
        "--set",
        f"data_dir={jpeg_folder}",
        "--set",
        "num_workers=1",
        "--output-dir",
        str(tmp_path / "o"),
        "--no-tracking",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    [path] = _result_files(tmp_path / "o")
    result = read_result(path)
    assert result.workload_info["classes"] == 3 and result.workload_info["dataset_samples"] == 12
    assert result.summary is not None and result.summary.measured_samples >= 6


def test_missing_data_dir_fails_clearly_and_keeps_no_valid_result(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = trainbench(
        "run",
        "resnet50-cpu",
        *TINY_RUN,
        "--set",
        "data=imagefolder",
        "--set",
        f"data_dir={empty}",
        "--output-dir",
        str(tmp_path / "o"),
        "--no-tracking",
        cwd=tmp_path,
    )
    assert proc.returncode == 1
    assert "not a usable ImageFolder" in proc.stderr
    assert not _result_files(tmp_path / "o")
    [kept] = _result_files(tmp_path / "o", "result-incomplete.json")
    assert read_result(kept).status == "incomplete" and read_result(kept).summary is None


def test_sigint_stops_the_run_and_keeps_the_steps_measured(tmp_path: Path, store_uri: str) -> None:
    exe = Path(sys.executable).parent / "trainbench"
    args = [
        str(exe),
        "run",
        "resnet50-cpu",
        *TINY_RUN,
        "--set",
        "measure_seconds=600",
        "--output-dir",
        str(tmp_path / "o"),
        "--tracking-uri",
        store_uri,
    ]
    proc = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    progress: list[Path] = []
    while time.monotonic() < deadline:
        progress = list((tmp_path / "o").rglob("progress.jsonl"))
        if progress and '"measurement"' in progress[0].read_text():
            break
        time.sleep(0.2)
    assert progress, "the run never reached its measurement window"
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert time.monotonic() - t0 < 30, "a SIGINT must stop the run within seconds"
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr
    assert not _result_files(tmp_path / "o")
    [kept] = _result_files(tmp_path / "o", "result-incomplete.json")
    result = read_result(kept)
    assert result.status == "incomplete" and result.summary is None and len(result.steps) >= 2
    client = MlflowClient(tracking_uri=store_uri)
    exp = client.get_experiment_by_name("resnet50-cpu")
    assert exp is not None
    [run] = client.search_runs([exp.experiment_id])
    assert run.info.status == "KILLED"


def test_error_text_with_brackets_is_printed_not_parsed_as_markup(tmp_path: Path) -> None:
    odd = tmp_path / "[bold]x[/nope]"
    proc = trainbench(
        "run",
        "resnet50-cpu",
        *TINY_RUN,
        "--set",
        "data=imagefolder",
        "--set",
        f"data_dir={odd}",
        "--output-dir",
        str(tmp_path / "o"),
        "--no-tracking",
        cwd=tmp_path,
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "[bold]x[/nope]" in proc.stderr
