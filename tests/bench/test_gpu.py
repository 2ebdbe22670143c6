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
