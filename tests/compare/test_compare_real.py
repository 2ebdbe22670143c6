"""``compare`` on two real tiny ResNet-50 runs (batch 2 vs 4, fp32): a ratio with its CI and the knob that differs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from suite.results import read_result
from tests.conftest import TINY_RUN, trainbench

REPO = Path(__file__).resolve().parents[2]


def _run(tmp_path: Path, batch: int) -> Path:
    out = tmp_path / f"bs{batch}"
    proc = trainbench(
        "run", "resnet50-cpu", *TINY_RUN, "--set", f"batch_size={batch}", "--set", "precision=fp32",
        "--set", "repeats=2", "--output-dir", str(out), "--no-tracking", "--system", "test-box", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return out


def test_two_real_runs_give_a_ratio_with_its_interval_and_the_differing_knob(tmp_path: Path) -> None:
    a, b = _run(tmp_path, 2), _run(tmp_path, 4)
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"} | {"COLUMNS": "120"}
    proc = subprocess.run(
        [sys.executable, "-m", "suite", "compare", str(a), str(b), "--json", str(tmp_path / "c.json")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "c.json").read_text())
    ratio = doc["ratio"]
    assert ratio["method"] == "delta-log" and ratio["units_a"] == 2 and ratio["units_b"] == 2
    assert 0 < ratio["low"] <= ratio["ratio"] <= ratio["high"]
    assert ratio["significant"] == (ratio["low"] > 1 or ratio["high"] < 1)
    assert doc["knobs"] == [{"key": "params.batch_size", "a": "2", "b": "4"}] and doc["comparable"]
    [ra] = [read_result(p) for p in a.rglob("result.json")]
    [rb] = [read_result(p) for p in b.rglob("result.json")]
    assert ra.summary is not None and rb.summary is not None
    assert doc["a"]["throughput"] == pytest.approx(ra.summary.throughput)
    assert doc["b"]["throughput"] == pytest.approx(rb.summary.throughput)
    assert doc["a"]["name"] == "resnet50-cpu fp32 bs2 [image_size=64] @ test-box"
    assert "95% CI" in proc.stdout and "params.batch_size" in proc.stdout
    assert "delta method on the log scale" in proc.stdout
