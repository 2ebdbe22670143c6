"""``trainbench run ... --launcher slurm`` against the real demo cluster, as a user runs it from this host.

Each test runs the installed ``trainbench`` with the cluster's ``SLURM_CONF`` and an output
directory on the cluster's shared filesystem: the two multi-rank workloads across two
nodes (numa-ddp with its one-node scaling comparison, Horovod over Gloo), a node killed
mid-run, a job stuck in the queue, Ctrl-C, and the supervisor killed with SIGKILL.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from suite.results import read_result
from suite.slurm.cluster import Cluster
from suite.slurm.conf import SLURMD_TIMEOUT_S
from tests.conftest import trainbench
from tests.slurm.conftest import TINY
from tests.slurm.validate import validator_errors

JOB_TINY = [a for o in TINY if not o.startswith("measure_steps") for a in ("--set", o)]
RUN_TINY = [*JOB_TINY, "--set", "measure_steps=4", "--set", "repeats=2"]
"""Tiny real ResNet-50 ranks (fp32, batch 2, 64x64 images): 2 repeats of 4 measured steps, for an interval."""
LONG = [*JOB_TINY, "--set", "measure_steps=100000", "--set", "compare_single=false"]
"""numa-ddp that would train for hours: it only ends by a fault, a signal or a cancel."""
EXE = str(Path(sys.executable).parent / "trainbench")


def _env(cluster: Cluster) -> dict[str, str]:
    return {"SLURM_CONF": cluster.conf}


def _out(cluster: Cluster) -> Path:
    return Path(cluster.shared[0]) / f"o-{uuid.uuid4().hex[:8]}"


def _start(cluster: Cluster, out: Path, *args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"} | _env(cluster)
    cmd = [EXE, "run", "numa-ddp", "--launcher", "slurm", "--nodes", "2", *LONG, *args, "--no-tracking"]
    return subprocess.Popen(
        [*cmd, "--output-dir", str(out)], env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def _measured(out: Path) -> int:
    return sum(p.read_text().count('"measurement"') for p in out.rglob("progress*.jsonl"))


def _wait_measuring(run: subprocess.Popen[str], out: Path, steps: int, timeout: float = 300) -> Path:
    """Block until the ranks have measured ``steps`` steps in all; return the run directory."""
    deadline = time.monotonic() + timeout
    while _measured(out) < steps:
        assert run.poll() is None, run.communicate()
        assert time.monotonic() < deadline, f"the job measured {_measured(out)} steps in {timeout:.0f} s"
        time.sleep(0.3)
    [run_dir] = [p.parent for p in out.rglob("job.sbatch")]
    return run_dir


def _docker(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=120)


JOB_PROCESSES = ("workloads.rank", "torch.distributed", "suite.slurm", "slurmstepd: [")
"""What a job runs on a node: ranks, torchrun agents, Horovod's slots and server, Slurm's step daemons."""


RANKS = ("workloads.rank",)


def _node_ranks(cluster: Cluster, node: str, keys: tuple[str, ...] = JOB_PROCESSES) -> list[str]:
    """The job's processes left in a node: by default all of them; with ``keys=RANKS`` the ranks themselves
    (not the srun, torchrun or Horovod commands whose arguments name the rank's command)."""
    ps = _docker("exec", cluster.containers[node], "ps", "-eo", "stat,args")
    found = []
    for line in ps.stdout.splitlines()[1:]:
        stat, _, args = line.strip().partition(" ")
        words = args.split()
        if stat.startswith("Z") or not any(k in args for k in keys):
            continue
        if keys == RANKS and (words[0].endswith("srun") or "torch.distributed.run" in args or "suite.slurm" in args):
            continue
        found.append(line)
    return found


def _settled(cluster: Cluster, nodes: tuple[str, ...], limit: float = 30) -> list[str]:
    """The job's processes still on ``nodes`` once they are gone or ``limit`` seconds have passed."""
    deadline = time.monotonic() + limit
    while True:
        left = [line for node in nodes for line in _node_ranks(cluster, node)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.5)


def _host_leftovers(run_dir: Path) -> list[str]:
    import psutil

    return [
        " ".join(p.info["cmdline"] or [])
        for p in psutil.process_iter(["cmdline"])
        if str(run_dir) in " ".join(p.info["cmdline"] or [])
    ]


def _wait_idle(cluster: Cluster, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = cluster.client().node_states()
        if all(states.get(n, "").startswith("idle") for n in cluster.nodes):
            return
        time.sleep(0.5)
    raise AssertionError(f"the nodes did not return to idle: {cluster.client().node_states()}")


def _result(out: Path, name: str = "result.json") -> tuple[Path, dict[str, Any]]:
    [path] = [p for p in out.rglob(name) if p.parent.name != "one-node"]
    return path, json.loads(path.read_text())


@pytest.mark.slow
def test_numa_ddp_on_two_nodes_records_the_job_its_nodes_and_the_one_node_scaling(
    slurm_cluster: Cluster, tmp_path: Path
) -> None:
    out, uri = _out(slurm_cluster), f"sqlite:///{tmp_path / 'mlflow.db'}"
    start = time.monotonic()
    proc = trainbench(
        "run", "numa-ddp", "--launcher", "slurm", "--nodes", "2", *RUN_TINY, "--output-dir", str(out),
        "--tracking-uri", uri, cwd=tmp_path, env=_env(slurm_cluster) | {"MLFLOW_TRACKING_URI": uri}, timeout=600,
    )  # fmt: skip
    took = time.monotonic() - start
    assert proc.returncode == 0, proc.stdout + proc.stderr
    path, doc = _result(out)
    result = read_result(path)
    job = result.runtime.slurm
    assert job is not None and result.runtime.kind == "slurm" and job.state == "COMPLETED"
    assert (job.nodelist, job.nodes, job.num_nodes, job.partition) == ("n[1-2]", ["n1", "n2"], 2, "debug")
    assert f"job {job.job_id} RUNNING on n[1-2]" in " ".join(proc.stdout.split())
    assert result.world_size == 2 and result.system == f"{slurm_cluster.name}:n[1-2]"
    assert result.nodes is not None and [n.hostname for n in result.nodes.nodes] == ["n1", "n2"]
    assert all(n.utilization and n.system["host"]["hostname"] == n.hostname for n in result.nodes.nodes)
    assert result.nodes.heterogeneous is False
    sc = result.scaling
    assert sc is not None and sc.nodes == 2 and read_result(Path(sc.single_result)).world_size == 1
    assert sc.efficiency == pytest.approx(sc.ddp_throughput / (2 * sc.single_throughput))
    interval = f"{sc.efficiency_ci95_low:.2f}-{sc.efficiency_ci95_high:.2f}" if sc.efficiency_ci95_high else "unbounded"
    print(
        f"numa-ddp 2 nodes: {sc.ddp_throughput:.2f} samples/s, 1 node {sc.single_throughput:.2f} samples/s; "
        f"efficiency {sc.efficiency:.2f} (95% CI {interval}); both jobs, submit to result: {took:.0f} s"
    )
    low, high = sc.efficiency_ci95_low, sc.efficiency_ci95_high
    assert low is not None and high is not None and low <= sc.efficiency <= high, "the efficiency has its interval"
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("numa-ddp")
    assert experiment is not None
    [run] = client.search_runs([experiment.experiment_id])
    tags = run.data.tags
    assert (tags["trainbench.slurm_job_id"], tags["trainbench.slurm_nodelist"]) == (job.job_id, "n[1-2]")
    assert tags["trainbench.runtime"] == "slurm" and tags["trainbench.nodes"] == "2: n1, n2"
    assert tags["trainbench.nodes_heterogeneous"] == "false" and "trainbench.node.n2" in tags
    assert {"system/n1/cpu_utilization_percentage", "system/n2/cpu_utilization_percentage"} <= set(run.data.metrics)
    validator_errors(doc, multi_rank=True)


@pytest.mark.slow
def test_horovod_over_gloo_on_two_nodes_gives_one_result(slurm_cluster: Cluster, tmp_path: Path) -> None:
    out = _out(slurm_cluster)
    proc = trainbench(
        "run", "resnet50-gpu-horovod", "--runtime", "slurm", "--nodes", "2", "--set", "device=cpu", *RUN_TINY,
        "--no-tracking", "--output-dir", str(out), cwd=tmp_path, env=_env(slurm_cluster), timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    path, doc = _result(out)
    result = read_result(path)
    assert result.runtime.launcher == "horovodrun" and result.world_size == 2 and result.scaling is None
    assert result.runtime.slurm is not None and result.runtime.slurm.nodes == ["n1", "n2"]
    assert sorted({s.rank for s in result.steps}) == [0, 1]
    assert "Horovod rendezvous on n1" in (path.parent / "hvd-rendezvous.log").read_text()
    validator_errors(doc, multi_rank=True)


@pytest.mark.slow
def test_a_node_killed_mid_run_fails_the_run_and_keeps_the_measured_steps(slurm_cluster: Cluster) -> None:
    out = _out(slurm_cluster)
    run = _start(slurm_cluster, out)
    try:
        run_dir = _wait_measuring(run, out, 4)
        assert _docker("kill", slurm_cluster.containers["n2"]).returncode == 0
        killed = time.monotonic()
        _, stderr = run.communicate(timeout=SLURMD_TIMEOUT_S + 120)
        took = time.monotonic() - killed
    finally:
        if run.poll() is None:
            run.kill()
        _docker("start", slurm_cluster.containers["n2"])
    print(f"node killed -> trainbench exited {run.returncode} after {took:.1f} s (SlurmdTimeout {SLURMD_TIMEOUT_S} s)")
    assert run.returncode == 1 and took < SLURMD_TIMEOUT_S + 60
    text = " ".join(stderr.split())
    assert "run failed" in text and "a node of the job failed" in text and "result-incomplete.json" in text, text
    result = read_result(run_dir / "result-incomplete.json")
    assert result.status == "incomplete" and result.summary is None
    assert result.runtime.slurm is not None and result.runtime.slurm.state in ("NODE_FAIL", "FAILED")
    assert len([s for s in result.steps if s.phase.value == "measurement"]) >= 4
    assert _settled(slurm_cluster, ("n1",)) == [], "no process of the job is left on the surviving node"
    assert _host_leftovers(run_dir) == [], "nothing of the run is left on the submitting host"
    errors = validator_errors(result.model_dump(mode="json"))
    assert any(f.code == "incomplete" for f in errors), "the validator refuses an incomplete run"
    _wait_idle(slurm_cluster)


def test_a_job_pending_past_the_queue_timeout_is_cancelled_with_a_clear_message(
    slurm_cluster: Cluster, tmp_path: Path
) -> None:
    out = _out(slurm_cluster)
    start = time.monotonic()
    proc = trainbench(
        "run", "numa-ddp", "--runtime", "slurm", "--nodes", "3", "--queue-timeout", "3", *JOB_TINY, "--no-tracking",
        "--output-dir", str(out), cwd=tmp_path, env=_env(slurm_cluster), timeout=120,
    )  # fmt: skip
    assert proc.returncode == 1 and time.monotonic() - start < 60
    text = " ".join(proc.stderr.split())
    assert "was still pending after" in text and "queue timeout 3 s" in text and "so it was cancelled" in text, text
    _, doc = _result(out, "result-incomplete.json")
    assert doc["runtime"]["slurm"]["state"] == "CANCELLED" and doc["steps"] == []


@pytest.mark.slow
def test_ctrl_c_cancels_the_job_and_keeps_what_was_measured(slurm_cluster: Cluster) -> None:
    out = _out(slurm_cluster)
    run = _start(slurm_cluster, out)
    try:
        run_dir = _wait_measuring(run, out, 2)
        run.send_signal(signal.SIGINT)
        stdout, stderr = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 130, stderr
    assert "cancelling job" in stdout and "run interrupted" in " ".join(stderr.split())
    result = read_result(run_dir / "result-incomplete.json")
    assert result.runtime.slurm is not None and result.runtime.slurm.state == "CANCELLED"
    assert str(result.error).startswith("interrupted") and len(result.steps) >= 2
    assert _node_ranks(slurm_cluster, "n1", RANKS) == [], "the job ended: no rank is left"
    assert _settled(slurm_cluster, ("n1", "n2")) == []


@pytest.mark.slow
def test_the_supervisor_killed_with_sigkill_leaves_no_rank_on_the_nodes(slurm_cluster: Cluster, tmp_path: Path) -> None:
    """Ranks stop within 10 s (their lifeline); the job's other processes (torchrun, slurmstepd) follow them."""
    out, ranks = _out(slurm_cluster), RANKS
    run = _start(slurm_cluster, out)

    def left(keys: tuple[str, ...] = JOB_PROCESSES) -> list[str]:
        return _node_ranks(slurm_cluster, "n1", keys) + _node_ranks(slurm_cluster, "n2", keys)

    try:
        run_dir = _wait_measuring(run, out, 2)
        assert len(left(ranks)) == 2, left()
        run.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        run.communicate()
        while left(ranks):
            assert time.monotonic() - killed < 30, "ranks still running 30 s after their supervisor died"
            time.sleep(0.2)
        took = time.monotonic() - killed
        while left():
            assert time.monotonic() - killed < 60, f"the job's processes outlived their ranks: {left()}"
            time.sleep(0.5)
        job_gone = time.monotonic() - killed
    finally:
        if run.poll() is None:
            run.kill()
    print(f"Slurm ranks gone {took:.1f} s after trainbench run's SIGKILL; all the job's processes {job_gone:.1f} s")
    assert took < 10
    time.sleep(12)  # the ranks' lifeline has run out; the next invocation keeps what they measured
    synced = trainbench("sync", "--output-dir", str(out), cwd=tmp_path)
    assert synced.returncode == 0 and f"run {run_dir} lost its supervisor" in " ".join(synced.stderr.split())
    result = read_result(run_dir / "result-incomplete.json")
    assert result.runtime.kind == "slurm" and "supervisor was lost" in str(result.error)
    assert len([s for s in result.steps if s.phase.value == "measurement"]) >= 2
