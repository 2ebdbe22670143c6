"""Faults on the real demo cluster: a node killed mid-job, a job stuck in the queue, a refused job, a run
directory the nodes cannot see, a cancelled job, and a supervisor that disappears."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from suite.slurm.client import JobInfo
from suite.slurm.cluster import Cluster, for_conf, unshared
from suite.slurm.conf import MESSAGE_TIMEOUT_S, SLURMD_TIMEOUT_S
from suite.slurm.errors import QueueTimeoutError, SlurmError
from suite.slurm.follow import cancel, describe_end, follow, submit
from suite.slurm.options import SlurmOptions
from suite.slurm.script import RankCommand, sbatch_script
from tests.slurm.conftest import measurement, rank_job
from workloads.lifeline import Heartbeat

LONG = ["measure_steps=100000", "compare_single=false"]
"""numa-ddp that would train for hours: it only ends by a fault."""


def _steps(run_dir: Path, name: str = "progress.jsonl") -> int:
    path = run_dir / name
    return path.read_text().count('"measurement"') if path.exists() else 0


def _measured(m: dict[str, Any]) -> int:
    return len([s for s in m.get("steps", []) if s["phase"] == "measurement"])


def _measurements_by_host(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Each rank's measurement file (rank 0's and ``-rank<r>``'s), by the node it ran on."""
    out = {}
    for path in run_dir.glob("measurement*.json"):
        m = json.loads(path.read_text())
        out[m["system"]["host"]["hostname"]] = m
    return out


def _docker(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=120)


def _wait_idle(cluster: Cluster, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = cluster.client().node_states()
        if all(states.get(n, "").startswith("idle") for n in cluster.nodes):
            return
        time.sleep(0.5)
    raise AssertionError(f"the nodes did not return to idle: {cluster.client().node_states()}")


def _rank_processes(cluster: Cluster, node: str) -> str:
    ps = _docker("exec", cluster.containers[node], "ps", "-eo", "pid,args")
    return "\n".join(line for line in ps.stdout.splitlines() if "workloads.rank" in line or "torch.distributed" in line)


@pytest.mark.slow
def test_a_node_killed_mid_job_ends_it_node_fail_and_keeps_the_measured_steps(
    slurm_cluster: Cluster, run_dir: Path
) -> None:
    rank = rank_job(run_dir, "numa-ddp", LONG)
    client = slurm_cluster.client()
    job = submit(client, sbatch_script(SlurmOptions(nodes=2, python=slurm_cluster.python), rank, run_dir), run_dir)
    killed: list[float] = []

    def kill_when_measuring(info: JobInfo) -> None:
        if not killed and _steps(run_dir) + _steps(run_dir, "progress-rank1.jsonl") >= 4:
            assert _docker("kill", slurm_cluster.containers["n2"]).returncode == 0
            killed.append(time.monotonic())

    try:
        info = follow(client, job, poll_s=1.0, on_poll=kill_when_measuring)
        took = time.monotonic() - killed[0]
        print(f"node kill -> {info.state} reported after {took:.1f} s (SlurmdTimeout {SLURMD_TIMEOUT_S} s)")
        assert info.state in ("NODE_FAIL", "FAILED"), info
        assert took < SLURMD_TIMEOUT_S + 60
        log = run_dir / f"slurm-{job}.out"
        assert "node" in (describe_end(info, log) or "").lower()
        by_host = _measurements_by_host(run_dir)
        survivor = by_host["n1"]
        assert survivor["complete"] is False and survivor["error"], "the surviving rank says why it stopped"
        assert _measured(survivor) >= 1, "the surviving rank kept its steps"
        lost = by_host["n2"]  # written at start ("still running"); its steps are in its progress log
        assert _steps(run_dir, "progress.jsonl" if lost["rank"] == 0 else "progress-rank1.jsonl") >= 1
        assert _rank_processes(slurm_cluster, "n1") == "", "no rank is left running on the surviving node"
    finally:
        _docker("start", slurm_cluster.containers["n2"])
        _wait_idle(slurm_cluster)


def test_a_job_pending_past_the_queue_timeout_is_cancelled_with_the_reason(
    slurm_cluster: Cluster, run_dir: Path
) -> None:
    client = slurm_cluster.client()
    options = SlurmOptions(python=slurm_cluster.python, sbatch_args=("--hold",), queue_timeout_s=3)
    job = submit(client, sbatch_script(options, RankCommand("inline", ("-c", "pass")), run_dir), run_dir)
    with pytest.raises(QueueTimeoutError, match=r"still pending after [3-9] s.*JobHeldUser.*cancelled") as caught:
        follow(client, job, queue_timeout_s=options.queue_timeout_s, poll_s=0.5)
    assert caught.value.job_id == job and caught.value.reason == "JobHeldUser" and caught.value.exit_code == 1
    info = client.job(job)
    assert info is not None and info.state == "CANCELLED"


def test_more_nodes_than_the_cluster_has_pend_until_the_queue_timeout(slurm_cluster: Cluster, run_dir: Path) -> None:
    """Slurm accepts a job bigger than its partition and leaves it pending: the queue timeout ends it."""
    client = slurm_cluster.client()
    options = SlurmOptions(nodes=3, python=slurm_cluster.python, queue_timeout_s=3)
    job = submit(client, sbatch_script(options, RankCommand("torchrun", ("-c", "pass")), run_dir), run_dir)
    with pytest.raises(QueueTimeoutError, match=r"still pending.*Slurm's reason: (?!none)") as caught:
        follow(client, job, queue_timeout_s=options.queue_timeout_s, poll_s=0.5)
    print(f"3 nodes of 2: pending, reason {caught.value.reason}")
    info = client.job(job)
    assert info is not None and info.state == "CANCELLED"


def test_sbatch_refusing_a_job_is_a_clear_error(slurm_cluster: Cluster, run_dir: Path) -> None:
    options = SlurmOptions(partition="no-such-partition", python=slurm_cluster.python)
    script = sbatch_script(options, RankCommand("inline", ("-c", "pass")), run_dir)
    with pytest.raises(SlurmError, match=r"sbatch --parsable .* failed \(exit 1.*[Pp]artition") as caught:
        submit(slurm_cluster.client(), script, run_dir)
    assert caught.value.exit_code == 2


def test_the_demo_cluster_is_found_from_its_config_and_knows_its_shared_directories(
    slurm_cluster: Cluster, run_dir: Path, tmp_path: Path
) -> None:
    found = for_conf(slurm_cluster.client().conf)
    assert found is not None and found.name == slurm_cluster.name and found.python == "/opt/trainbench/bin/python"
    assert for_conf(tmp_path / "slurm.conf") is None and for_conf(None) is None
    assert unshared(found, run_dir) is None
    assert "not on the cluster's shared filesystem" in (unshared(found, tmp_path) or "")


def test_a_run_directory_the_nodes_cannot_see_fails_with_a_shared_filesystem_message(
    slurm_cluster: Cluster, tmp_path: Path
) -> None:
    client = slurm_cluster.client()
    job = submit(
        client, sbatch_script(SlurmOptions(python=slurm_cluster.python), RankCommand("inline", ()), tmp_path), tmp_path
    )
    info = follow(client, job, poll_s=0.5)
    assert info.state == "FAILED"
    assert "shared" in (describe_end(info, tmp_path / f"slurm-{job}.out") or "")


@pytest.mark.slow
def test_cancel_stops_the_ranks_which_write_what_they_measured(slurm_cluster: Cluster, run_dir: Path) -> None:
    """Ctrl-C's path: scancel, the ranks get SIGTERM and write their partial measurements."""
    rank = rank_job(run_dir, "numa-ddp", LONG)
    client = slurm_cluster.client()
    job = submit(client, sbatch_script(SlurmOptions(nodes=2, python=slurm_cluster.python), rank, run_dir), run_dir)
    deadline = time.monotonic() + 300
    while _steps(run_dir) < 2 and time.monotonic() < deadline:
        time.sleep(0.5)
    info = cancel(client, job)
    assert info is not None and info.state == "CANCELLED"
    m = measurement(run_dir)
    assert m["complete"] is False and str(m["error"]).startswith("interrupted (SIGTERM")
    assert len([s for s in m["steps"] if s["phase"] == "measurement"]) >= 2
    assert _rank_processes(slurm_cluster, "n1") == "" and _rank_processes(slurm_cluster, "n2") == ""


@pytest.mark.slow
def test_ranks_on_the_nodes_stop_within_10s_when_the_supervisors_heartbeat_stops(
    slurm_cluster: Cluster, run_dir: Path
) -> None:
    """The supervisor's heartbeat lives in the shared run directory; the nodes' ranks judge it by their own clocks."""
    rank = rank_job(run_dir, "numa-ddp", LONG)
    client = slurm_cluster.client()
    heartbeat = Heartbeat(run_dir / "heartbeat").start()
    job_doc = json.loads((run_dir / "job.json").read_text())
    job_doc["lifeline"] = heartbeat.job_entry()
    (run_dir / "job.json").write_text(json.dumps(job_doc))
    job = submit(client, sbatch_script(SlurmOptions(nodes=2, python=slurm_cluster.python), rank, run_dir), run_dir)
    try:
        deadline = time.monotonic() + 300
        while _steps(run_dir) < 2 and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        heartbeat.stop()  # as if the supervisor were killed: no more beats
    stopped = time.monotonic()
    info = follow(client, job, poll_s=0.5)
    took = time.monotonic() - stopped
    print(f"heartbeat stopped -> job {info.state} after {took:.1f} s")
    assert info.terminal and took < 10 + 2 * MESSAGE_TIMEOUT_S
    ranks = list(_measurements_by_host(run_dir).values())
    assert all(m["complete"] is False and m["error"] and _measured(m) >= 1 for m in ranks), ranks
    # each rank's lifeline fires; a rank whose peer left first may instead see the collective fail
    assert any("lost its supervisor" in m["error"] for m in ranks), [m["error"] for m in ranks]
