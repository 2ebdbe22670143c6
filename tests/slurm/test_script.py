"""The generated sbatch scripts as text (every launcher, Pyxis), the options' checks, and reading Slurm's output.

The non-Pyxis scripts also run on the real cluster (test_jobs.py, test_faults.py); the
Pyxis variant needs a cluster with the Pyxis plugin, so its text is checked here, and
bash parses every variant (``bash -n``).
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from suite.launchers import HorovodrunLaunch, InlineLaunch, RunCpuLaunch, TorchrunLaunch
from suite.runtimes.slurm import rank_for
from suite.runtimes.slurm_script import RankCommand, sbatch_script
from suite.slurm.client import parse_sacct_job, parse_scontrol_job
from suite.slurm.errors import SlurmError
from suite.slurm.identity import node_systems
from suite.slurm.options import SlurmOptions
from suite.specs import ConfigError, resolve

RUN = Path("/shared/results/numa-ddp/20260101T000000Z-abcdef12")
RANK_ARGS = ("-m", "workloads.rank", "--job", f"{RUN}/job.json", "--out", f"{RUN}/measurement.json")


def _plan(workload: str, overrides: list[str]) -> RankCommand:
    return rank_for(resolve(workload, overrides=overrides), RUN)


def _srun_lines(script: str) -> list[list[str]]:
    return [shlex.split(line.rstrip(" &")) for line in script.splitlines() if line.startswith("srun ")]


def _bash_parses(script: str) -> None:
    proc = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True, timeout=10)
    assert proc.returncode == 0, proc.stderr


def test_rank_command_of_the_real_launch_plans() -> None:
    """The rank command is written for the nodes: the allocator is named, never a library path of this host
    (which may lack it), so this holds on a submitting host without libjemalloc2."""
    ddp = _plan("numa-ddp", ["nproc_per_node=2", "allocator=jemalloc"])
    assert ddp.launch.launcher == "torchrun"
    assert ddp.rank_args[:2] == ("-m", "workloads.rank") and "--standalone" not in ddp.rank_args
    assert ddp.allocator == "jemalloc" and "LD_PRELOAD" not in ddp.env and "MALLOC_CONF" in ddp.env
    hvd = _plan("resnet50-gpu-horovod", ["device=cpu"])
    assert hvd.launch.launcher == "horovodrun" and hvd.rank_args[-2:] == ("--progress", str(RUN / "progress.jsonl"))
    [step] = _srun_lines(sbatch_script(SlurmOptions(), RankCommand(InlineLaunch(), RANK_ARGS), RUN))[1:]
    assert step[4:] == ["$PY", *RANK_ARGS]
    with pytest.raises(ConfigError, match="'inline', 'run_cpu', 'torchrun' or 'horovodrun'"):
        resolve("resnet50-cpu", overrides=["launcher=mpirun"])


def test_torchrun_script_one_agent_per_node_with_c10d_on_the_first_node() -> None:
    options = SlurmOptions(
        nodes=4,
        ntasks_per_node=2,
        cpus_per_task=8,
        partition="cpu",
        time="1:00:00",
        account="ml",
        sbatch_args=("--exclusive", "--constraint=zen4"),
        python="/venv/bin/python",
    )
    script = sbatch_script(options, RankCommand(TorchrunLaunch(), RANK_ARGS, env={"OMP_NUM_THREADS": "8"}), RUN, "t")
    directives = [line.split(" ", 1)[1] for line in script.splitlines() if line.startswith("#SBATCH ")]
    assert directives == [
        "--job-name=trainbench",
        "--nodes=4",
        "--ntasks-per-node=2",
        "--cpus-per-task=8",
        "--partition=cpu",
        "--time=1:00:00",
        "--account=ml",
        f"--output={RUN}/slurm-%j.out",
        f"--chdir={RUN}",
        "--export=NONE",
        "--no-requeue",
        "--exclusive",
        "--constraint=zen4",
    ]
    assert "PY=/venv/bin/python\nexport OMP_NUM_THREADS=8\n" in script
    assert 'HEAD=$(printf "%s\\n" $NODES | head -n 1)' in script
    check, ranks = _srun_lines(script)
    assert (check[-3:-1] == ["-c", check[-2]] and check[-1] == str(RUN)) or check[-4] == str(RUN)
    assert ranks == [
        "srun",
        "--export=ALL",
        "--kill-on-bad-exit=1",
        "--ntasks=$SLURM_NNODES",
        "--ntasks-per-node=1",
        "--cpus-per-task=16",
        "--label",
        "$PY",
        "-m",
        "torch.distributed.run",
        "--nnodes=$SLURM_NNODES",
        "--nproc-per-node=2",
        "--rdzv-backend=c10d",
        "--rdzv-endpoint=$HEAD:$PORT",
        "--rdzv-id=$SLURM_JOB_ID",
        *RANK_ARGS,
    ]
    _bash_parses(script)


def test_horovod_script_runs_the_rendezvous_server_on_the_first_node_and_one_task_per_rank() -> None:
    script = sbatch_script(SlurmOptions(nodes=2, ntasks_per_node=4), RankCommand(HorovodrunLaunch(), RANK_ARGS), RUN)
    assert f"PY={sys.executable}" in script  # the default: this interpreter (a venv on the shared filesystem)
    assert 'HOSTS=$(printf "%s:4\\n" $NODES | paste -sd, -)' in script
    _, server, slots = _srun_lines(script)
    assert server == [
        "srun",
        "--export=ALL",
        "--kill-on-bad-exit=1",
        "--overlap",
        "--nodes=1",
        "--ntasks=1",
        "--nodelist=$HEAD",
        "$PY",
        "-m",
        "suite.slurm.horovod_gloo",
        "serve",
        "--port=$PORT",
        "--hosts=$HOSTS",
        ">hvd-rendezvous.log",
        "2>&1",
    ]
    i = slots.index("--")
    assert slots[:i] == [
        "srun",
        "--export=ALL",
        "--kill-on-bad-exit=1",
        "--overlap",
        "--ntasks=$SLURM_NTASKS",
        "--ntasks-per-node=4",
        "--label",
        "$PY",
        "-m",
        "suite.slurm.horovod_gloo",
        "slot",
        "--rendezvous=$HEAD:$PORT",
        "--hosts=$HOSTS",
    ]
    assert slots[i + 1 :] == ["$PY", *RANK_ARGS]
    assert script.rstrip().endswith('kill "$SERVER" 2>/dev/null\nwait "$SERVER" 2>/dev/null\nexit "$code"')
    _bash_parses(script)


def test_pyxis_script_runs_every_rank_step_in_the_image_with_the_run_directory_mounted() -> None:
    options = SlurmOptions(
        nodes=2,
        gpus_per_node="h100:8",
        ntasks_per_node=8,
        container_image="registry.example.com#trainbench/trainbench-gpu:0.1.0",
        container_mounts=("/datasets/imagenet:/data:ro",),
    )
    script = sbatch_script(options, RankCommand(HorovodrunLaunch(), RANK_ARGS), RUN)
    assert "#SBATCH --gpus-per-node=h100:8" in script and "PY=python\n" in script
    check, *steps = _srun_lines(script)
    assert not any(a.startswith("--container") for a in check), "the shared-directory check runs on the node itself"
    for step in steps:
        assert "--container-image=registry.example.com#trainbench/trainbench-gpu:0.1.0" in step
        assert f"--container-mounts={RUN}:{RUN},/datasets/imagenet:/data:ro" in step
        assert f"--container-workdir={RUN}" in step
    torchrun = sbatch_script(options, RankCommand(TorchrunLaunch(), RANK_ARGS), RUN)
    assert all("--container-image" in " ".join(s) for s in _srun_lines(torchrun)[1:])
    _bash_parses(script)
    _bash_parses(torchrun)


def test_one_rank_launchers_run_one_task_and_refuse_more() -> None:
    rank = RankCommand(RunCpuLaunch(), RANK_ARGS)
    script = sbatch_script(SlurmOptions(), rank, RUN)
    [_, step] = _srun_lines(script)
    assert step[3:8] == ["--ntasks=1", "$PY", "-m", "torch.backends.xeon.run_cpu", "--use-default-allocator"]
    assert step[step.index("--no-python") + 1 :] == ["$PY", *RANK_ARGS]
    _bash_parses(script)
    with pytest.raises(SlurmError, match=r"starts one rank.*2 node"):
        sbatch_script(SlurmOptions(nodes=2), rank, RUN)
    with pytest.raises(SlurmError, match="must be absolute"):
        sbatch_script(SlurmOptions(), rank, Path("results/x"))


def test_values_with_shell_characters_are_quoted() -> None:
    rank = RankCommand(InlineLaunch(), ("-m", "workloads.rank", "--job", "/r/it's $(here).json"), env={"X": "a b;c"})
    script = sbatch_script(SlurmOptions(python="/opt/py"), rank, Path("/r/dir with space"))
    assert "export X='a b;c'" in script
    assert _srun_lines(script)[1][-1] == "/r/it's $(here).json"
    _bash_parses(script)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("time", "an hour", "sbatch's syntax"),
        ("sbatch_args", ("--nodes=3",), "use the nodes option"),
        ("sbatch_args", ("-o", "x"), "writes the job's log"),
        ("sbatch_args", ("--requeue",), "measure again"),
        ("sbatch_args", ("exclusive",), "one option"),
        ("sbatch_args", ("--comment=a\nb",), "one option"),
        ("container_mounts", ("data:/data",), "absolute"),
        ("nodes", 0, "greater than or equal to 1"),
        ("partition", "a b", "pattern"),
        ("queue_timeout_s", float("inf"), "finite"),
        ("gpus_per_node", "eight", "pattern"),
    ],
)
def test_options_refuse_bad_values_with_a_reason(field: str, value: object, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        SlurmOptions.model_validate({field: value})


def test_options_accept_sbatch_time_formats_and_count_ranks() -> None:
    for value in ("30", "30:00", "1:00:00", "2-0", "2-12:00", "2-12:00:00", "UNLIMITED"):
        assert SlurmOptions(time=value).time == value
    assert SlurmOptions(nodes=3, ntasks_per_node=4).ntasks == 12
    assert SlurmOptions.model_validate({"gpus_per_node": 8}).gpus_per_node == "8"


SCONTROL = (
    "JobId=9 JobName=trainbench UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901751 Nice=0 "
    "Account=(null) QOS=(null) JobState=NODE_FAIL Reason=NodeDown Dependency=(null) Requeue=0 Restarts=0 "
    "BatchFlag=1 Reboot=0 ExitCode=0:15 RunTime=00:00:31 TimeLimit=UNLIMITED Partition=debug "
    "AllocNode:Sid=localhost:17978 ReqNodeList=(null) ExcNodeList=(null) NodeList=n[1-2] BatchHost=n1 "
    "NumNodes=2 NumCPUs=2 NumTasks=2 CPUs/Task=1 TRES=cpu=2,node=2,billing=2 Command=/r/job.sbatch "
    "WorkDir=/r StdErr=/r/slurm-9.out StdIn=/dev/null StdOut=/r/slurm-9.out Power= \n"
)


def test_scontrol_and_sacct_job_lines_are_read() -> None:
    info = parse_scontrol_job(SCONTROL)
    assert (info.job_id, info.state, info.reason, info.nodelist, info.num_nodes) == (
        "9",
        "NODE_FAIL",
        "NodeDown",
        "n[1-2]",
        2,
    )
    assert (info.partition, info.batch_host, info.exit_code, info.stdout) == ("debug", "n1", "0:15", "/r/slurm-9.out")
    assert info.terminal and not info.pending
    pending = parse_scontrol_job(
        "JobId=3 JobState=PENDING Reason=Resources NodeList=(null) NumNodes=3-3 Partition=debug"
    )
    assert pending.pending and pending.nodelist is None and pending.num_nodes == 3
    with pytest.raises(SlurmError, match="cannot read"):
        parse_scontrol_job("slurm_load_jobs error: Invalid job id specified")
    sacct = parse_sacct_job("12|CANCELLED by 0|0:15|n[1-4]|gpu|4|None\n", "12")
    assert sacct is not None and (sacct.state, sacct.num_nodes, sacct.reason, sacct.source) == (
        "CANCELLED",
        4,
        None,
        "sacct",
    )
    assert parse_sacct_job("", "12") is None


def _rank(rank: int, host: str, model: str, cpus: int) -> dict[str, object]:
    system = {
        "host": {"hostname": host},
        "cpu": {"model": model, "flags": ["avx2"], "logical_cores": 64},
        "binding": {"cpus_allowed": list(range(cpus))},
        "numa_nodes": [{"node": 0}],
        "memory": {"total_bytes": 2**37},
        "gpus": {"devices": []},
        "libraries": {"torch": "2.14.1"},
    }
    return {"rank": rank, "system": system}


def test_node_systems_one_per_node_and_differences_marked() -> None:
    same = node_systems([_rank(1, "a", "EPYC", 32), _rank(0, "a", "EPYC", 32), _rank(2, "b", "EPYC", 32)])
    assert [(n["hostname"], n["ranks"]) for n in same["nodes"]] == [("a", [0, 1]), ("b", [2])]
    assert same["heterogeneous"] is False and same["differences"] == {}
    mixed = node_systems([_rank(0, "a", "EPYC", 32), _rank(1, "b", "Xeon", 16)])
    assert mixed["heterogeneous"] is True
    assert mixed["differences"] == {"cpu_model": {"a": "EPYC", "b": "Xeon"}, "cpus_allowed": {"a": 32, "b": 16}}
    lost = node_systems([_rank(0, "a", "EPYC", 32), {"rank": 1}])
    assert [n["hostname"] for n in lost["nodes"]] == ["a", "unknown"] and lost["heterogeneous"] is False
