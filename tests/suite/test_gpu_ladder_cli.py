"""The GPU ladder on the CPU path that CI runs: `trainbench ladder resnet50-gpu-horovod --set device=cpu`, real
tiny runs (engine=ddp under torchrun, one rank), every rung's loss trajectory checked against fp32's, CUDA
graphs skipped with the reason, the batch-size search, the best-config file, and a later run told how far it
is from it.

Without the compile rungs (torch.compile on the CPU takes minutes; the one test that compiles is in
test_ladder_compile.py) and without bf16 (at 32 x 32 its autocast ran 5x slower than fp32 on a 2-vCPU
Xeon; its numerics are measured in ladder_tolerance_figures.py). Batch 16 at 32 x 32: the GPU ladder's
trajectory takes 16 distinct samples or more, as with fewer this workload's SGD (momentum 0.9) let the
fp32 trajectory oscillate (suite/ladder/numerics.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from suite.ladder.numerics import TOLERANCE
from suite.results import read_result
from suite.run.config_file import read_config_file
from tests.conftest import trainbench

TINY = [
    "engine=ddp", "device=cpu", "nproc_per_node=1", "batch_size=16", "image_size=32", "warmup_steps=1",
    "warmup_seconds=0", "measure_steps=4", "measure_seconds=0", "repeats=2", "sampler_interval_s=0.2",
]  # fmt: skip


def test_the_gpu_ladder_runs_on_the_cpu_checks_every_trajectory_and_writes_its_best(tmp_path: Path) -> None:
    sets = [a for s in TINY for a in ("--set", s)]
    proc = trainbench(
        "ladder", "resnet50-gpu-horovod", "--rungs", "fp32,cudagraphs,fused,batch", *sets,
        "--trajectory-steps", "4", "--output-dir", str(tmp_path / "o"), "--no-tracking", cwd=tmp_path, timeout=900,
        env={"COLUMNS": "220"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr + proc.stdout
    text = " ".join(proc.stdout.split())
    assert "resnet50-gpu-horovod: GPU ladder (cumulative)" in text
    for column in ("first step s", "warm-up s", "numerics"):
        assert column in text
    assert "skipped + CUDA graphs: CUDA graphs need a GPU (device=cpu here)" in text
    assert "ratios: 95% CI by the delta method on the log scale" in text
    [ladder_json] = (tmp_path / "o").rglob("ladder.json")
    doc = json.loads(ladder_json.read_text())
    rows = {r["rung"]: r for r in doc["rungs"]}
    assert list(rows) == ["fp32", "cudagraphs", "fused", "batch-32"]
    ran = [r for r in rows.values() if r["status"] == "complete"]
    assert [r["rung"] for r in ran] == ["fp32", "fused", "batch-32"]
    for r in ran:
        n = r["numerics"]
        assert n["valid"] and len(n["losses"]) == 4 and all(v is not None for v in n["losses"])
        assert n["status"] == ("reference" if r["rung"] == "fp32" else "ok") and n["deviation"] <= TOLERANCE
        assert r["first_step_s"] > 0 and r["warmup_s"] >= r["first_step_s"]  # apart from the throughput
        result = read_result(Path(r["result_path"]))
        trajectory = result.workload_info["loss_trajectory"]
        assert trajectory["distinct_samples"] == 16 and trajectory["seconds"] > 0
        assert trajectory["start_s"] > max(w.start_s + w.seconds for w in result.windows) - 1e-9  # after the windows
    batch32 = read_result(Path(rows["batch-32"]["result_path"]))
    assert batch32.config.params["batch_size"] == 32 and batch32.config.params["trajectory_batch"] == 16
    assert batch32.workload_info["optimizer_impl"] == "fused" and batch32.workload_info["precision"] == "fp32"
    fp32_losses, b32_losses = rows["fp32"]["numerics"]["losses"], rows["batch-32"]["numerics"]["losses"]
    assert fp32_losses[0] == pytest.approx(b32_losses[0], rel=1e-3)  # the same first batch and weights, in fp32
    # the best config, with what it measured, and a later run told how far it is from it
    config = read_config_file(ladder_json.parent / "best-config.json")
    best = doc["rungs"][doc["best"]]
    assert config.best is not None and config.overrides == best["overrides"]
    assert config.best.world_size == 1 and config.best.throughput_samples_per_s == best["throughput_samples_per_s"]
    again = trainbench(
        "run", "resnet50-gpu-horovod", *sets, "--set", "precision=fp32", "--output-dir", str(tmp_path / "o"),
        "--no-tracking",
        cwd=tmp_path, timeout=600, env={"COLUMNS": "400"},
    )  # fmt: skip
    assert again.returncode == 0, again.stderr + again.stdout
    said = " ".join(again.stdout.split())
    assert f"ladder's best on {config.best.device} (1 rank)" in said and "of it (95% CI" in said
    assert f"trainbench run --config {ladder_json.parent / 'best-config.json'}" in said
