"""Launch environment: allocator preload, OpenMP settings, run_cpu."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from suite import launchers as launch
from suite.launchers import InlineLaunch, RunCpuLaunch, allocators


def test_default_launch_sets_only_glibcs_malloc_thresholds() -> None:
    plan = launch.plan_launch(InlineLaunch(), Path("j.json"), Path("o.json"), base_env={})
    assert plan.env_set == {"GLIBC_TUNABLES": allocators.GLIBC_MALLOC_TUNABLES}
    assert plan.command == [sys.executable, "-m", "workloads.rank", "--job", "j.json", "--out", "o.json"]


def test_openmp_settings_become_environment() -> None:
    cfg = InlineLaunch(
        omp_num_threads=2,
        kmp_blocktime=1,
        kmp_affinity="granularity=fine,compact,1,0",
        omp_proc_bind="close",
        omp_places="cores",
    )
    env = launch.plan_launch(cfg, Path("j"), Path("o"), base_env={}).env_set
    assert env == {
        "GLIBC_TUNABLES": allocators.GLIBC_MALLOC_TUNABLES,
        "OMP_NUM_THREADS": "2",
        "KMP_BLOCKTIME": "1",
        "KMP_AFFINITY": "granularity=fine,compact,1,0",
        "OMP_PROC_BIND": "close",
        "OMP_PLACES": "cores",
    }


@pytest.mark.parametrize("name", ["jemalloc", "tcmalloc"])
def test_allocator_is_preloaded_ahead_of_existing_preload(name: str) -> None:
    soname = allocators.ALLOCATORS[name][0]
    if allocators.find_library(soname) is None:
        pytest.skip(f"{soname} not installed")
    env = launch.plan_launch(
        InlineLaunch(allocator=name), Path("j"), Path("o"), base_env={"LD_PRELOAD": "/x/libother.so"}
    ).env_set
    first, rest = env["LD_PRELOAD"].split(":", 1)
    assert first.endswith(soname) and Path(first).is_absolute() and rest == "/x/libother.so"
    assert ("MALLOC_CONF" in env) == (name == "jemalloc")
    assert "GLIBC_TUNABLES" not in env  # glibc's thresholds are for glibc's malloc only


def test_missing_allocator_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(allocators.ALLOCATORS, "jemalloc", ("libjemalloc-not-here.so.9", "libjemalloc2"))
    with pytest.raises(launch.LaunchError, match="apt-get install libjemalloc2") as info:
        launch.plan_launch(InlineLaunch(allocator="jemalloc"), Path("j"), Path("o"), search_dirs=("/nonexistent",))
    assert "allocator=default" in str(info.value)


def test_malloc_conf_needs_jemalloc() -> None:
    with pytest.raises(launch.LaunchError, match="allocator=jemalloc"):
        launch.plan_launch(InlineLaunch(malloc_conf="x:1"), Path("j"), Path("o"), base_env={})


def test_run_cpu_command() -> None:
    plan = launch.plan_launch(RunCpuLaunch(), Path("j"), Path("o"), Path("p"), python="py")
    assert plan.command[:3] == ["py", "-m", "torch.backends.xeon.run_cpu"]
    assert "--no-python" in plan.command and plan.command[-8:] == [
        "-m",
        "workloads.rank",
        "--job",
        "j",
        "--out",
        "o",
        "--progress",
        "p",
    ]


def test_torchrun_starts_one_unbound_rank_per_gpu_of_a_gpu_workload() -> None:
    """Without nproc_per_node, a GPU workload gets one rank per visible GPU and no NUMA binding; a CPU
    workload (gpus=0) keeps one bound rank per NUMA node."""
    per_gpu = launch.plan_launch(launch.TorchrunLaunch(), Path("j"), Path("o"), base_env={}, gpus=4)
    assert "--nproc-per-node=4" in per_gpu.command and per_gpu.processes == 4 and not per_gpu.placement
    per_node = launch.plan_launch(launch.TorchrunLaunch(topology="0"), Path("j"), Path("o"), base_env={}, gpus=0)
    assert per_node.placement and per_node.processes == 1


def test_torchrun_numa_placement_without_numactl_is_refused_before_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """The preflight refuses it with both fixes; ranks one per GPU need no numactl."""
    monkeypatch.setattr("shutil.which", lambda name: None)
    with pytest.raises(launch.LaunchError, match=r"apt-get install numactl.*nproc_per_node"):
        launch.TorchrunLaunch(topology="0").check_local(launch.RankStart("python", [], gpus=0))
    launch.TorchrunLaunch().check_local(launch.RankStart("python", [], gpus=2))
    launch.TorchrunLaunch(nproc_per_node=2).check_local(launch.RankStart("python", [], gpus=0))
