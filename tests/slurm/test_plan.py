"""A run's config as a Slurm job (no cluster needed): the job's launch settings, the node-side allocator,
the command line's options and refusals, and ``--dry-run``."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from suite.config import RunConfig
from suite.launchers import LaunchError
from suite.launchers.allocators import ALLOCATORS, find_library
from suite.launchers.srun import PY
from suite.runtimes.slurm import SlurmRuntime, rank_for
from suite.runtimes.slurm_script import sbatch_script
from suite.slurm import node_env
from suite.slurm.node_env import EXIT_MISSING, preload_env
from suite.slurm.options import SlurmOptions
from suite.specs import resolve
from tests.conftest import REPO, trainbench

RUN = Path("/shared/results/numa-ddp/20260101T000000Z-abcdef12")


def _job(workload: str, overrides: list[str], given: bool = False, **options: object) -> tuple[RunConfig, SlurmOptions]:
    runtime = SlurmRuntime(SlurmOptions.model_validate(options), ranks_per_node_given=given)
    config = resolve(workload, overrides=overrides)
    return runtime.job_config(config), runtime.job_options(config)


def test_the_job_config_takes_its_nodes_and_ranks_per_node_from_the_job() -> None:
    config, options = _job("numa-ddp", [], nodes=2)
    assert (config.launch.nnodes, config.launch.nproc_per_node, options.ntasks_per_node) == (2, 1, 1)  # type: ignore[union-attr]
    config, options = _job("numa-ddp", ["nproc_per_node=2"], nodes=3)
    assert (config.launch.nnodes, config.launch.nproc_per_node, options.ntasks) == (3, 2, 6)  # type: ignore[union-attr]
    config, options = _job("resnet50-gpu-horovod", ["device=cpu"], given=True, nodes=2, ntasks_per_node=4)
    assert config.launch.nproc_per_node == 4 and options.ntasks == 8  # type: ignore[union-attr]
    again = SlurmRuntime(options, ranks_per_node_given=True).job_config(config)
    assert again == config, "the job's config is a fixed point (execute checks it again in preflight)"


@pytest.mark.parametrize(
    ("workload", "overrides", "options", "message"),
    [
        ("numa-ddp", ["topology=0;1"], {}, "topology / rdzv_endpoint describe this host"),
        ("numa-ddp", ["nnodes=4", "rdzv_endpoint=h:1"], {"nodes": 2}, "this host"),
        ("numa-ddp", ["nnodes=4"], {"nodes": 2}, "nnodes=4 but --nodes 2"),
        ("resnet50-gpu-horovod", ["device=cpu", "hosts=a:1,b:1"], {}, "the job's nodes are the hosts"),
        ("resnet50-cpu", ["cpus=0-1"], {}, "this host's CPU numbers"),
        ("numa-ddp", ["nproc_per_node=2"], {"ntasks_per_node": 4}, "nproc_per_node=2 but --ntasks-per-node 4"),
    ],
)
def test_settings_that_describe_this_host_are_refused(
    workload: str, overrides: list[str], options: dict[str, object], message: str
) -> None:
    with pytest.raises(LaunchError, match=message):
        _job(workload, overrides, given="ntasks_per_node" in options, **options)


def test_the_allocator_is_found_on_the_node_never_on_this_host() -> None:
    config, options = _job("numa-ddp", ["allocator=jemalloc"], nodes=2)
    rank = rank_for(config, RUN)
    assert (
        rank.allocator == "jemalloc" and "LD_PRELOAD" not in rank.env and "dirty_decay_ms:-1" in rank.env["MALLOC_CONF"]
    )
    [step] = [
        shlex.split(line) for line in sbatch_script(options, rank, RUN).splitlines() if "torch.distributed" in line
    ]
    i = step.index("suite.slurm.node_env")
    assert step[i - 2 : i + 5] == ["$PY", "-m", "suite.slurm.node_env", "--allocator=jemalloc", "--", "$PY", "-m"]
    hvd, hvd_options = _job("resnet50-gpu-horovod", ["device=cpu", "allocator=tcmalloc"], nodes=2)
    script = sbatch_script(hvd_options, rank_for(hvd, RUN), RUN)
    slots = next(shlex.split(line) for line in script.splitlines() if " slot " in line)
    after = slots[slots.index("--") + 1 :]
    assert after[:5] == [PY.strip('"'), "-m", "suite.slurm.node_env", "--allocator=tcmalloc", "--"]
    with pytest.raises(LaunchError, match="malloc_conf applies to allocator=jemalloc only"):
        rank_for(resolve("resnet50-cpu", overrides=["malloc_conf=x:1"]), RUN)


def test_node_env_preloads_the_nodes_library() -> None:
    """node_env runs on a node and preloads the node's own library: here this host stands for the node, so
    the test needs the library here (a submitting host without it still writes the plan: see above)."""
    if find_library(ALLOCATORS["jemalloc"][0]) is None:
        pytest.skip(
            "libjemalloc.so.2 is not installed on this host, which stands for the node (apt-get install libjemalloc2)"
        )
    env = preload_env("jemalloc", {"LD_PRELOAD": "/opt/other.so"})
    first, second = env["LD_PRELOAD"].split(":")
    assert first.endswith("libjemalloc.so.2") and Path(first).exists() and second == "/opt/other.so"
    assert preload_env("default", {"A": "1"}) == {"A": "1"}
    shown = subprocess.run(
        [sys.executable, "-m", "suite.slurm.node_env", "--allocator=jemalloc", "--", "sh", "-c", "echo $LD_PRELOAD"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0 and shown.stdout.strip().endswith("libjemalloc.so.2"), shown.stderr


def test_node_env_without_the_library_exits_2_naming_the_package(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import suite.launchers.allocators

    monkeypatch.setattr(suite.launchers.allocators, "find_library", lambda *_: None)
    assert node_env.main(["--allocator=tcmalloc", "--", "true"]) == EXIT_MISSING
    err = capsys.readouterr().err
    assert "libtcmalloc.so.4 was not found" in err and "apt-get install libgoogle-perftools4" in err


def test_dry_run_prints_the_script_and_submits_nothing(tmp_path: Path) -> None:
    proc = trainbench(
        "run", "numa-ddp", "--launcher", "slurm", "--nodes", "2", "--time", "10", "--sbatch-arg=--exclusive",
        "--dry-run", "--output-dir", str(tmp_path / "o"), cwd=tmp_path, env={"SLURM_CONF": "/nonexistent/slurm.conf"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("#!/bin/bash\n") and "#SBATCH --nodes=2" in proc.stdout
    assert "#SBATCH --exclusive" in proc.stdout and '--rdzv-endpoint="$HEAD:$PORT"' in proc.stdout
    assert "nothing was submitted" in proc.stdout and not (tmp_path / "o").exists()
    script = proc.stdout.split("\n# dry run:")[0]
    assert subprocess.run(["bash", "-n"], input=script, text=True, timeout=10).returncode == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--nodes", "2"], "--nodes applies to --runtime slurm (or --launcher slurm) only"),
        (["--runtime", "slurm", "--memory", "8g"], "--memory applies to --runtime docker only"),
        (["--launcher", "slurm", "--runtime", "docker"], "contradict each other"),
        (["--runtime", "slurm", "--time", "soon"], "--time: Value error, time 'soon' is not in sbatch's syntax"),
        (["--runtime", "slurm", "--sbatch-arg=--nodes=3"], "trainbench sets --nodes itself"),
        (["--runtime", "slurm", "--set", "topology=0;1"], "describe this host"),
    ],
)
def test_bad_slurm_options_are_refused_before_anything_runs(tmp_path: Path, args: list[str], message: str) -> None:
    proc = trainbench("run", "numa-ddp", *args, *(["--dry-run"] if "slurm" in args else []), cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in " ".join(proc.stderr.split())


def test_without_a_slurm_client_the_run_says_what_to_install(tmp_path: Path) -> None:
    env = {"PATH": str(Path(sys.executable).parent), "SLURM_CONF": "/nonexistent/slurm.conf"}
    proc = trainbench(
        "run", "numa-ddp", "--runtime", "slurm", "--no-tracking", "--output-dir", "o", cwd=tmp_path, env=env
    )
    assert proc.returncode == 2
    assert "apt-get install slurm-client munge" in " ".join(proc.stderr.split())
    assert not list(tmp_path.rglob("job.json")), "nothing was submitted"
