"""``make gpu-check`` (``trainbench gpu-check``): its CPU path, which CI runs, and its GPU path, which a GPU host runs.

On the CPU the figures mean nothing; what is tested is that a rung really trains in one process with
bare and harness blocks interleaved, that its loss trajectory is recorded, that the table and the goal
lines are printed and written, and that a task the budget cannot hold is listed with the command that
measures it alone rather than run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import trainbench

TINY = ["--device", "cpu", "--set", "batch_size=16", "--set", "image_size=32", "--pairs", "2", "--block-steps", "2",
        "--warmup-steps", "1", "--trajectory-steps", "2"]  # fmt: skip


def test_a_cpu_rung_trains_bare_and_harness_blocks_and_the_goals_are_printed(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = trainbench("gpu-check", *TINY, "--rows", "fp32", "--output-dir", str(out), cwd=tmp_path, timeout=900)
    assert proc.returncode == 0, proc.stderr
    [row] = json.loads((out / "gpu-check.json").read_text())["rows"]
    f = row["figures"]
    assert row["name"] == "fp32" and row["note"] is None
    assert f["harness"] > 0 and f["bare"] > 0 and len(f["pairs"]) == 2
    assert f["summary"]["n"] == 1 and f["first_step_s"] > 0 and f["device_step_ms"] is None  # no CUDA events on a CPU
    assert len(f["losses"]) == 2 and all(v > 0 for v in f["losses"])
    assert "harness/bare >= 0.99 at every rung measured (1)" in proc.stdout
    assert "ladder best: fp32 at" in proc.stdout and "the goal of 6,000 missed" in proc.stdout
    assert not (out / "imagenet-like").exists(), "no pipeline ran, so no JPEG set was generated"


def test_tasks_the_budget_cannot_hold_are_listed_with_their_command(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = trainbench("gpu-check", *TINY, "--budget-s", "1", "--output-dir", str(out), cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads((out / "gpu-check.json").read_text())["rows"]
    assert {r["name"] for r in rows} >= {"fp32", "channels_last", "eager", "compiled", "cudagraphs"}
    assert all(r["note"].startswith("not measured: about") for r in rows)
    assert "ARGS='--rows compile'" in next(r["note"] for r in rows if r["name"] == "compile")
    assert not (out / "imagenet-like").exists()


def test_bad_rows_and_a_missing_gpu_are_refused(tmp_path: Path) -> None:
    bad = trainbench("gpu-check", "--device", "cpu", "--rows", "fp32,warp-speed", cwd=tmp_path)
    assert bad.returncode == 2 and "unknown warp-speed" in bad.stderr and "Traceback" not in bad.stderr
    import torch

    if torch.cuda.is_available():
        pytest.skip("this host has a GPU")
    no_gpu = trainbench("gpu-check", "--rows", "fp32", "--output-dir", str(tmp_path / "o"), cwd=tmp_path)
    assert no_gpu.returncode == 2 and "no NVIDIA GPU is visible" in no_gpu.stderr and "--device cpu" in no_gpu.stderr


@pytest.mark.gpu
def test_the_gpu_check_on_a_gpu(tmp_path: Path) -> None:
    """On a GPU host: the eager ceiling rung measures device step times and energy, within the goal's reach."""
    out = tmp_path / "out"
    proc = trainbench("gpu-check", "--rows", "channels_last", "--output-dir", str(out), cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    [row] = json.loads((out / "gpu-check.json").read_text())["rows"]
    f = row["figures"]
    assert row["note"] is None and f["device_step_ms"] > 0 and f["samples_per_joule"] > 0
    assert f["summary"]["median"] > 0.9
