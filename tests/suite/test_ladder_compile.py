"""The one test that compiles: the GPU ladder's compile rung on the CPU path (inductor builds C++ kernels, which
takes minutes here), its compilation reported apart from its throughput, and its loss trajectory still fp32's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from suite.ladder.rungs import find_cxx
from tests.conftest import trainbench
from tests.suite.test_gpu_ladder_cli import TINY


@pytest.mark.slow
@pytest.mark.skipif(find_cxx() is None, reason="torch.compile on the CPU needs a C++ compiler (apt-get install g++)")
def test_the_compile_rung_reports_its_compilation_apart_and_trains_the_same_model(tmp_path: Path) -> None:
    sets = [a for s in TINY for a in ("--set", s)]
    proc = trainbench(
        "ladder", "resnet50-gpu-horovod", "--rungs", "fp32,compile", *sets, "--trajectory-steps", "4",
        "--output-dir", str(tmp_path), "--no-tracking", cwd=tmp_path, timeout=1800,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr + proc.stdout
    [ladder_json] = tmp_path.rglob("ladder.json")
    rows = {r["rung"]: r for r in json.loads(ladder_json.read_text())["rungs"]}
    fp32, compiled = rows["fp32"], rows["compile"]
    assert compiled["status"] == "complete" and compiled["adds"] == ["compile=inductor"]
    # the compilation is in the first warm-up step, not in the measurement windows
    assert compiled["first_step_s"] > 5 * fp32["first_step_s"] and compiled["warmup_s"] >= compiled["first_step_s"]
    assert compiled["throughput_samples_per_s"] > 0
    n = compiled["numerics"]
    assert n["status"] == "ok" and len(n["losses"]) == 4 and n["deviation"] <= n["tolerance"]
