"""Real distributed results validate like single-process ones, and forged ones do not: a 2-rank numa-ddp
run (gloo, two pseudo-nodes of one core) made here, and resnet50-gpu-horovod over Gloo in the
trainbench-gpu image (the container tests' fixtures; skipped without an engine, failed in CI)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from suite.files import read_json
from suite.results import seal
from suite.rules import load_rules
from suite.validation.findings import Findings, Severity
from suite.validation.result_checks import CheckContext, check_result, parse_result
from tests.conftest import trainbench
from tests.containers.conftest import engine, gpu_image  # noqa: F401 - fixtures
from tests.workloads.test_resnet50_gpu import TINY_CPU

pytestmark = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="two CPUs for two ranks")

DDP = ["--set", "topology=0;1", "--set", "batch_size=2", "--set", "image_size=64", "--set", "warmup_steps=1",
       "--set", "measure_steps=4", "--set", "measure_seconds=0", "--set", "repeats=2",
       "--set", "sampler_interval_s=0.1", "--set", "compare_single=false"]  # fmt: skip


def _check(doc: dict[str, Any]) -> list[tuple[str, str, str]]:
    findings = Findings()
    result = parse_result(doc, "result.json", findings)
    assert result is not None
    check_result(result, "result.json", findings, CheckContext(load_rules()))
    return [(f.code, f.where, f.message) for f in findings if f.severity is Severity.ERROR]


def _honest_then_forged(path: Path) -> None:
    doc = read_json(path)
    assert doc["world_size"] == 2 and len(doc["windows"]) == 8  # a window per rank, repeat and phase
    assert _check(doc) == []
    for factor in (1.05, 10.0, 100.0):
        forged = {**doc, "summary": {**doc["summary"], "throughput": doc["summary"]["throughput"] * factor}}
        forged.pop("digest")
        errors = _check(seal(forged).model_dump(mode="json"))
        assert any(c == "summary-mismatch" and w.endswith("#summary/throughput") for c, w, _ in errors), errors


@pytest.mark.numactl
def test_real_numa_ddp_result_validates_and_its_forgeries_do_not(tmp_path: Path) -> None:
    proc = trainbench("run", "numa-ddp", *DDP, "--output-dir", str(tmp_path / "o"), "--no-tracking",
                      cwd=tmp_path, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [path] = list((tmp_path / "o").rglob("result.json"))
    _honest_then_forged(path)


def test_real_horovod_gloo_result_validates_and_its_forgeries_do_not(
    engine: Any,  # noqa: F811
    gpu_image: Any,  # noqa: F811
    tmp_path: Path,
) -> None:
    proc = trainbench("run", "resnet50-gpu-horovod", *TINY_CPU, "--runtime", "docker", "--shm-size", "512m",
                      "--output-dir", str(tmp_path / "o"), "--no-tracking", cwd=tmp_path, timeout=900)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [path] = list((tmp_path / "o").rglob("result.json"))
    _honest_then_forged(path)
