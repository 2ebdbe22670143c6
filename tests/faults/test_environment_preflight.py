"""Environment problems are found before a long run starts (exit 2, nothing written)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from suite.errors import PreflightError
from suite.run import preflight as runner
from suite.run.options import RunOptions
from suite.run.preflight import preflight
from suite.specs import SPECS_DIR, resolve
from tests.conftest import trainbench


def _refused(tmp_path: Path, *args: str) -> str:
    out = tmp_path / "o"
    proc = trainbench("run", "resnet50-cpu", *args, "--output-dir", str(out), "--no-tracking", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert not list(out.rglob("*.json")) if out.exists() else True
    return proc.stderr


def test_cores_and_numa_nodes_that_do_not_exist(tmp_path: Path) -> None:
    n = os.cpu_count() or 1
    assert f"CPU(s) [{n}, {n + 1}] requested" in _refused(tmp_path, "--set", f"cpus={n}-{n + 1}")
    assert "NUMA node(s) [7] requested" in _refused(tmp_path, "--set", "numa_nodes=7")


def test_unwritable_output_dir(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    proc = trainbench("run", "resnet50-cpu", "--output-dir", str(blocker / "sub"), "--no-tracking", cwd=tmp_path)
    assert proc.returncode == 2 and "is not writable" in proc.stderr and "--output-dir" in proc.stderr


def test_too_little_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    monkeypatch.setattr(runner, "MIN_FREE_BYTES", shutil.disk_usage(tmp_path).free * 4)
    with pytest.raises(PreflightError, match="MiB free; a run needs"):
        preflight(resolve("resnet50-cpu"), RunOptions(tmp_path, None))


def test_gpu_workload_without_a_gpu(tmp_path: Path) -> None:
    from harness.gpus import gpu_devices

    if gpu_devices()["devices"]:
        pytest.skip("this machine has a GPU")
    raw = yaml.safe_load((SPECS_DIR / "resnet50-cpu.yaml").read_text())
    raw["requires_gpu"] = True
    (tmp_path / "resnet50-cpu.yaml").write_text(yaml.safe_dump(raw))
    config = resolve("resnet50-cpu", directory=tmp_path)
    with pytest.raises(PreflightError, match="needs an NVIDIA GPU, but none is visible"):
        preflight(config, RunOptions(tmp_path / "o", None))


@pytest.mark.numactl
def test_binding_to_existing_cpu_is_read_back(tmp_path: Path) -> None:
    from suite.results import read_result
    from tests.conftest import TINY_RUN

    proc = trainbench(
        "run",
        "resnet50-cpu",
        *TINY_RUN,
        "--set",
        "cpus=0",
        "--set",
        "numa_nodes=0",
        "--output-dir",
        str(tmp_path / "o"),
        "--no-tracking",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    [path] = list((tmp_path / "o").rglob("result.json"))
    result = read_result(path)
    assert result.environment["binding"]["cpus_allowed"] == [0]
    assert result.environment["binding"]["mems_allowed"] == [0]
    assert result.runtime.command[:1] == ["numactl"]
