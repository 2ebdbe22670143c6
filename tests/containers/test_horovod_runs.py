"""resnet50-gpu-horovod through the harness in the trainbench-gpu image without a GPU:
``horovodrun --gloo -np 2`` trains real CPU steps; the combined result is asserted."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from suite.results import read_result
from tests.conftest import trainbench
from tests.faults.helpers import EXE
from tests.workloads.test_resnet50_gpu import TINY_CPU, assert_combined
from workloads.cpu_precision import decide

pytestmark = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="two CPUs for two ranks")


def test_horovodrun_gloo_two_ranks_in_the_gpu_image(engine: Any, gpu_image: Any, tmp_path: Path) -> None:
    """Two Horovod ranks over Gloo in the gpu image give one combined result and one MLflow run. bf16 autocast
    (the workload's default) where the CPU has native bf16; fp32 elsewhere, so the test never waits on
    emulated bf16 (an AVX2-only Zen 1, or a cap: torch obeys ONEDNN_MAX_CPU_ISA and ATEN_CPU_CAPABILITY)."""
    precision = decide("auto").chosen  # what precision=auto picks here (the GPU workload has no auto)
    uri = f"sqlite:///{tmp_path / 'store.db'}"
    out = tmp_path / "o"
    proc = trainbench(
        "run",
        "resnet50-gpu-horovod",
        *TINY_CPU,
        "--set",
        f"precision={precision}",
        "--runtime",
        "docker",
        "--shm-size",
        "512m",
        "--output-dir",
        str(out),
        "--tracking-uri",
        uri,
        cwd=tmp_path,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [path] = list(out.rglob("result.json"))
    r = read_result(path)
    assert_combined(r, world=2, per_rank_batch=2, repeats=2)
    assert r.runtime.kind == "docker" and r.runtime.image_id == gpu_image.id
    assert r.runtime.launcher == "horovodrun" and "horovod.runner.launch" in r.runtime.command
    info = r.workload_info
    assert info["engine"] == "horovod" and info["device"] == "cpu" and info["precision"] == precision
    assert info["horovod"]["version"] == "0.28.1" and info["horovod"]["gloo_built"] and info["horovod"]["nccl_built"]
    assert info["channels_last"] and not info["weights_channels_last"]
    # each rank read back its own environment inside the container
    assert [e["rank"] for e in r.environment["ranks"]] == [0, 1]
    assert r.environment["container"]["image"] == "trainbench-gpu:latest"
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("resnet50-gpu-horovod")
    assert experiment is not None
    [run] = client.search_runs([experiment.experiment_id])
    assert run.data.params["params.engine"] == "horovod" and run.data.params["launch.launcher"] == "horovodrun"
    assert run.data.metrics["throughput_samples_per_s"] == pytest.approx(r.summary.throughput if r.summary else 0)


def test_a_killed_horovod_rank_leaves_an_incomplete_result_with_both_ranks(
    engine: Any, gpu_image: Any, tmp_path: Path
) -> None:
    out = tmp_path / "o"
    args = [*TINY_CPU, "--set", "measure_steps=10000", "--set", "repeats=1", "--set", "stall_timeout_s=60"]
    proc = subprocess.Popen(
        [EXE, "run", "resnet50-gpu-horovod", *args, "--runtime", "docker", "--output-dir", str(out), "--no-tracking"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 300
        run_dir: Path | None = None
        while time.monotonic() < deadline:  # both ranks are measuring
            dirs = list((out / "resnet50-gpu-horovod").glob("*")) if (out / "resnet50-gpu-horovod").exists() else []
            if dirs:
                run_dir = dirs[0]
                logs = [run_dir / "progress.jsonl", run_dir / "progress-rank1.jsonl"]
                if all(p.exists() and p.read_text().count('"measurement"') >= 2 for p in logs):
                    break
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.5)
        else:
            raise AssertionError("the two ranks never reached their measurement windows")
        assert run_dir is not None
        pids = subprocess.run(["pgrep", "-f", f"workloads.rank --job {run_dir}"], capture_output=True, text=True)
        ranks = [int(p) for p in pids.stdout.split()]
        rank1 = [p for p in ranks if "HOROVOD_RANK=1" in Path(f"/proc/{p}/environ").read_text().replace("\0", " ")]
        assert rank1, f"rank 1 not found among {ranks}"
        os.kill(rank1[0], signal.SIGKILL)
        _, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0
    [path] = list(out.rglob("result-incomplete.json"))
    r = read_result(path)
    assert r.status == "incomplete" and r.summary is None
    assert {s.rank for s in r.steps} == {0, 1}, "the steps both ranks measured are kept"
    assert "incomplete" in stderr or "failed" in stderr
