"""``trainbench bench-gpu``: the utilization arithmetic, and the ladder end to end on CPU
(DDP, one rank, tiny images) so the command path runs in CI; its GPU figures need a GPU host."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from suite.bench.gpu import peak_tflops, utilization
from tests.conftest import trainbench


def test_utilization_uses_24_6_gflop_per_image_and_the_dense_bf16_peak() -> None:
    # 3,000 images/s x 24.6 GFLOP = 73.8 TFLOP/s of 989 on an H100
    assert utilization(3000.0, 224, "NVIDIA H100 80GB HBM3") == pytest.approx(73.8 / 989.0)
    # the cost scales with the pixel count
    assert utilization(3000.0, 112, "NVIDIA H200") == pytest.approx(73.8 / 4 / 989.0)
    assert peak_tflops("NVIDIA A100-SXM4-80GB") == 312.0
    assert utilization(100.0, 224, "cpu") is None and peak_tflops("Tesla T4") is None


def test_bad_ladder_options_are_refused(tmp_path: Path) -> None:
    proc = trainbench("bench-gpu", "--rungs", "fp8", cwd=tmp_path)
    assert proc.returncode != 0 and "unknown rung(s) ['fp8']" in proc.stderr
    proc = trainbench("bench-gpu", "--batch-sizes", "big", cwd=tmp_path)
    assert proc.returncode != 0 and "expected integers" in proc.stderr
    proc = trainbench("bench-gpu", "--set", "engine=mpi", cwd=tmp_path)
    assert proc.returncode != 0 and "engine" in proc.stderr


def test_the_ladder_runs_through_trainbench_run_on_cpu(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    proc = trainbench(
        "bench-gpu",
        "--rungs",
        "fp32,bf16",
        "--batch-sizes",
        "2",
        "--steps",
        "2",
        "--set",
        "engine=ddp",
        "--set",
        "device=cpu",
        "--set",
        "nproc_per_node=1",
        "--set",
        "image_size=64",
        "--set",
        "warmup_steps=1",
        "--output-dir",
        str(out),
        cwd=tmp_path,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ResNet-50 GPU ladder" in proc.stdout
    doc = json.loads((out / "bench-gpu.json").read_text())
    cells = {c["rung"]: c for c in doc["cells"]}
    assert set(cells) == {"fp32", "bf16"}
    for c in cells.values():
        assert c["batch_size"] == 2 and c["throughput"] > 0 and c["per_gpu"] == c["throughput"]
        assert c["device"] == "cpu" and c["utilization"] is None
        assert Path(c["result"]).exists()


def test_sigterm_stops_the_ladder_and_keeps_the_cells_measured(tmp_path: Path) -> None:
    """SIGTERM (a CI timeout, `timeout`) during the second cell: the first cell's figure, the
    interrupted cell's incomplete result and the table are kept; exit 130, no third cell."""
    import os
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "bench"
    args = ["bench-gpu", "--rungs", "fp32", "--batch-sizes", "2,3,4", "--steps", "20", "--output-dir", str(out)]
    for setting in ("engine=ddp", "device=cpu", "nproc_per_node=1", "image_size=64", "warmup_steps=1"):
        args += ["--set", setting]
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    exe = Path(sys.executable).parent / "trainbench"
    proc = subprocess.Popen([str(exe), *args], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    runs = out / "resnet50-gpu-horovod"
    deadline = time.monotonic() + 300
    # wait until the second cell has measured a step, then stop the ladder as `timeout` would
    while time.monotonic() < deadline and proc.poll() is None:
        dirs = sorted(runs.glob("*")) if runs.exists() else []
        progress = dirs[1] / "progress.jsonl" if len(dirs) > 1 else None
        if progress and progress.exists() and '"measurement"' in progress.read_text():
            break
        time.sleep(0.1)
    assert proc.poll() is None, "the ladder ended before its second cell measured a step"
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = (b.decode() for b in proc.communicate(timeout=120))
    assert proc.returncode == 130, stdout + stderr
    assert "bench-gpu interrupted; the 2 cell(s) measured are in" in stderr
    assert "ResNet-50 GPU ladder" in stdout  # the table of what was measured
    doc = json.loads((out / "bench-gpu.json").read_text())
    assert doc["complete"] is False
    first, second = doc["cells"]
    assert first["batch_size"] == 2 and first["throughput"] > 0 and Path(first["result"]).name == "result.json"
    assert second["batch_size"] == 3 and second["throughput"] is None
    assert Path(second["result"]).name == "result-incomplete.json" and Path(second["result"]).exists()
    assert len(list(runs.glob("*"))) == 2  # no third cell started
