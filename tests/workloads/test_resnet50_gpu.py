"""The ResNet-50 GPU workload: params, engine/launcher resolution, launch plans, and real
2-rank DDP runs on CPU (gloo) through the CLI. Horovod runs are in
tests/containers/test_horovod_runs.py (Horovod is built in the trainbench-gpu image);
the GPU runs are marked ``gpu``."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from pydantic import ValidationError

from harness.records import Phase
from suite.launchers import HorovodrunLaunch, LaunchError, TorchrunLaunch, plan_launch
from suite.results import Result, read_result
from suite.specs import ConfigError, resolve
from tests.conftest import trainbench
from workloads.resnet50_gpu.params import ResNet50GPUParams

TINY_CPU = [
    "--set",
    "device=cpu",
    "--set",
    "nproc_per_node=2",
    "--set",
    "batch_size=2",
    "--set",
    "image_size=64",
    "--set",
    "precision=fp32",
    "--set",
    "warmup_steps=1",
    "--set",
    "warmup_seconds=0",
    "--set",
    "measure_steps=3",
    "--set",
    "measure_seconds=0",
    "--set",
    "repeats=2",
    "--set",
    "sampler_interval_s=0.1",
]
"""A real 2-rank CPU run of resnet50-gpu-horovod that takes seconds (64x64 images, batch 2 per rank)."""


def run_ddp(tmp_path: Path, *settings: str) -> subprocess.CompletedProcess[str]:
    """``trainbench run resnet50-gpu-horovod`` with TINY_CPU, engine=ddp and ``--set`` each of ``settings``."""
    extra = [arg for setting in settings for arg in ("--set", setting)]
    return trainbench(
        "run",
        "resnet50-gpu-horovod",
        *TINY_CPU,
        "--set",
        "engine=ddp",
        *extra,
        "--output-dir",
        str(tmp_path / "o"),
        "--no-tracking",
        cwd=tmp_path,
        timeout=600,
    )


def assert_combined(r: Result, world: int, per_rank_batch: int, repeats: int) -> None:
    """World size, every rank's records, total samples, and global throughput = total / slowest window."""
    assert r.status == "complete" and r.world_size == world
    assert r.workload_info["per_rank_batch_size"] == per_rank_batch
    assert r.workload_info["global_batch_size"] == per_rank_batch * world
    assert {s.rank for s in r.steps} == set(range(world))
    measured = [w for w in r.windows if w.phase is Phase.MEASUREMENT]
    assert len(measured) == world * repeats
    for k in range(repeats):
        ws = [w for w in measured if w.repeat == k]
        assert len({w.steps for w in ws}) == 1, "every rank ends a window at the same step"
    total = sum(w.samples for w in measured)
    assert total == sum(s.samples for s in r.steps if s.phase is Phase.MEASUREMENT)
    assert total == sum(w.steps for w in measured) * per_rank_batch
    slowest = sum(max(w.seconds for w in measured if w.repeat == k) for k in range(repeats))
    assert r.summary is not None
    assert r.summary.measured_samples == total
    assert r.summary.throughput == pytest.approx(total / slowest)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"device": "cpu", "precision": "fp16"}, "fp16 needs device=cuda"),
        ({"device": "cpu", "backend": "nccl"}, "nccl needs device=cuda"),
        ({"data": "imagefolder"}, "needs data_dir"),
        ({"engine": "mpi"}, "'horovod' or 'ddp'"),
        ({"batch_size": 0}, "greater than or equal to 1"),
        ({"learning_rate": 0.1}, "Extra inputs are not permitted"),
    ],
)
def test_bad_params_are_refused_with_the_reason(params: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ResNet50GPUParams.model_validate(params)


def test_the_engine_picks_its_launcher_and_device_cpu_drops_the_gpu_requirement() -> None:
    horovod = resolve("resnet50-gpu-horovod")
    assert horovod.launch.launcher == "horovodrun" and horovod.requires_gpu
    assert horovod.params["engine"] == "horovod"
    ddp = resolve("resnet50-gpu-horovod", overrides=["engine=ddp"])
    assert ddp.launch.launcher == "torchrun" and ddp.requires_gpu
    cpu = resolve("resnet50-gpu-horovod", overrides=["device=cpu"])
    assert not cpu.requires_gpu
    with pytest.raises(ConfigError, match="engine=ddp is started by launcher=torchrun, not horovodrun"):
        resolve("resnet50-gpu-horovod", overrides=["engine=ddp", "launcher=horovodrun"])
    with pytest.raises(ConfigError, match="engine=horovod is started by launcher=horovodrun"):
        resolve("resnet50-gpu-horovod", overrides=["launch.launcher=inline"])


def test_launch_plans_for_horovodrun_and_per_gpu_torchrun(tmp_path: Path) -> None:
    job, out = tmp_path / "job.json", tmp_path / "m.json"
    plan = plan_launch(HorovodrunLaunch(nproc_per_node=2), job, out, python="py")
    assert plan.command[:9] == ["py", "-m", "horovod.runner.launch", "--gloo", "-np", "2", "-H", "localhost:2", "py"]
    assert plan.command[9:] == ["-m", "workloads.rank", "--job", str(job), "--out", str(out)]
    assert plan.processes == 2 and plan.launcher == "horovodrun" and not plan.placement
    # without nproc_per_node: one rank per visible GPU, at least one
    assert HorovodrunLaunch().hosts_arg(gpu_count=8) == (8, "localhost:8")
    assert HorovodrunLaunch().hosts_arg(gpu_count=0) == (1, "localhost:1")
    assert HorovodrunLaunch(hosts="localhost:4,node2:4").hosts_arg(gpu_count=0) == (8, "localhost:4,node2:4")
    with pytest.raises(LaunchError, match="first host must be this machine"):
        HorovodrunLaunch(hosts="node2:4,localhost:4").hosts_arg(gpu_count=0)
    ddp = plan_launch(TorchrunLaunch(nproc_per_node=4), job, out, python="py")
    assert ddp.command[:5] == ["py", "-m", "torch.distributed.run", "--nproc-per-node=4", "--standalone"]
    assert ddp.processes == 4 and not ddp.placement
    with pytest.raises(LaunchError, match="either nproc_per_node"):
        plan_launch(TorchrunLaunch(nproc_per_node=2, topology="0;1"), job, out)
    with pytest.raises(ValidationError, match="cpus"):  # a setting of inline/run_cpu only
        HorovodrunLaunch.model_validate({"cpus": "0"})
    with pytest.raises(ConfigError, match="--set cpus applies to launcher=inline or run_cpu only"):
        resolve("resnet50-gpu-horovod", overrides=["cpus=0"])


def test_without_a_gpu_the_default_run_is_refused_before_it_starts(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("this host has a GPU")
    proc = trainbench("run", "resnet50-gpu-horovod", "--output-dir", str(tmp_path), "--no-tracking", cwd=tmp_path)
    assert proc.returncode != 0
    assert "needs an NVIDIA GPU" in proc.stderr and "choose a CPU workload" in proc.stderr
    assert not list(tmp_path.rglob("*.json"))


def test_horovod_missing_locally_is_a_clear_preflight_error(tmp_path: Path) -> None:
    import importlib.util

    if importlib.util.find_spec("horovod") is not None:
        pytest.skip("Horovod is installed here")
    proc = trainbench(
        "run", "resnet50-gpu-horovod", *TINY_CPU, "--output-dir", str(tmp_path), "--no-tracking", cwd=tmp_path
    )
    assert proc.returncode != 0
    assert "Horovod is not installed" in proc.stderr and "--runtime docker" in proc.stderr
    assert not list(tmp_path.rglob("result*.json"))


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="two CPUs for two ranks")
def test_ddp_engine_two_cpu_ranks_through_the_harness(tmp_path: Path) -> None:
    proc = run_ddp(tmp_path)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    [path] = list((tmp_path / "o").rglob("result.json"))
    r = read_result(path)
    assert_combined(r, world=2, per_rank_batch=2, repeats=2)
    assert r.config.launch.launcher == "torchrun" and r.runtime.launcher == "torchrun"
    assert r.config.params["engine"] == "ddp" and r.workload_info["engine"] == "ddp"
    assert r.workload_info["backend"] == "gloo" and r.workload_info["device"] == "cpu"
    assert r.workload_info["torch_threads"] == max(1, len(os.sched_getaffinity(0)) // 2)
    assert r.scaling is None  # no single-process comparison outside NUMA placement
    assert [e["rank"] for e in r.environment["ranks"]] == [0, 1]
    assert r.workload_info["wrapper"] == "torch.nn.parallel.DistributedDataParallel"


def test_one_rank_trains_unwrapped_and_validates(tmp_path: Path) -> None:
    """World size 1: nothing to all-reduce, so no DDP wrapper; the CPU path has no device timer or NVML."""
    proc = run_ddp(tmp_path, "nproc_per_node=1", "channels_last=true")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    [path] = list((tmp_path / "o").rglob("result.json"))
    r = read_result(path)  # re-derives the summary from the raw records
    assert_combined(r, world=1, per_rank_batch=2, repeats=2)
    assert r.workload_info["wrapper"] == "none (world size 1: nothing to all-reduce)"
    assert r.workload_info["weights_channels_last"] is True  # no broadcast, so the weights are NHWC too
    assert r.summary is not None and r.summary.step_time_source == "host"
    assert all(s.device_s is None for s in r.steps)
    assert r.utilization_summary is not None and r.utilization_summary.gpu is None
    assert r.diagnosis is not None and r.diagnosis.verdict in ("compute-bound", "partly input-bound")


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="two CPUs for two ranks")
def test_ddp_engine_reads_a_sharded_imagefolder(tmp_path: Path, jpeg_folder: Path) -> None:
    proc = run_ddp(tmp_path, "data=imagefolder", f"data_dir={jpeg_folder}", "num_workers=0")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    [path] = list((tmp_path / "o").rglob("result.json"))
    r = read_result(path)
    assert_combined(r, world=2, per_rank_batch=2, repeats=2)
    assert r.workload_info["dataset_samples"] == 12 and r.workload_info["data"] == "imagefolder"


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="two CPUs for two ranks")
def test_a_dataset_smaller_than_a_rank_batch_fails_with_the_fix(tmp_path: Path, jpeg_folder: Path) -> None:
    proc = run_ddp(tmp_path, "data=imagefolder", f"data_dir={jpeg_folder}", "batch_size=8")
    assert proc.returncode != 0
    assert "6 per rank, fewer than batch_size=8" in proc.stderr
    assert not list((tmp_path / "o").rglob("result.json"))


@pytest.mark.gpu
@pytest.mark.parametrize("engine", ["horovod", "ddp"])
def test_one_gpu_bf16_channels_last(tmp_path: Path, engine: str) -> None:
    import importlib.util

    if engine == "horovod" and importlib.util.find_spec("horovod") is None:
        pytest.skip("Horovod is not installed here (it is in the trainbench-gpu image)")
    proc = trainbench(
        "run",
        "resnet50-gpu-horovod",
        "--set",
        f"engine={engine}",
        "--set",
        "nproc_per_node=1",
        "--set",
        "batch_size=64",
        "--set",
        "warmup_steps=5",
        "--set",
        "measure_steps=10",
        "--set",
        "repeats=1",
        "--output-dir",
        str(tmp_path / "o"),
        "--no-tracking",
        cwd=tmp_path,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr + proc.stdout
    [path] = list((tmp_path / "o").rglob("result.json"))
    r = read_result(path)  # re-derives the summary, device step times included
    assert r.workload_info["device"] == "cuda:0" and r.summary is not None and r.summary.throughput > 0
    assert r.workload_info["wrapper"] == "none (world size 1: nothing to all-reduce)"
    assert r.summary.step_time_source == "device" and all(s.device_s is not None for s in r.steps)
    assert r.summary.host_step_time_median_s is not None and 0 < (r.summary.device_busy_fraction or 0) <= 1
    u = r.utilization_summary
    assert u is not None and u.gpu is not None, u and u.gpu_error
    assert u.gpu.util_mean_percent is not None and u.gpu.power_mean_w is not None
    assert u.gpu.samples_per_joule is not None and u.gpu.samples_per_joule > 0, u.gpu.note
    assert r.diagnosis is not None and r.diagnosis.verdict in ("gpu-bound", "host-bound")
