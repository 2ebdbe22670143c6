"""Faults of the job layer on the real demo cluster: a held job past its queue timeout, a refused job, a run
directory the nodes cannot see, a controller that stops answering for a while. (The faults of whole runs,
through ``trainbench run``: test_run.py.)"""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import pytest

from suite.launchers import InlineLaunch
from suite.runtimes.slurm_script import RankCommand, sbatch_script
from suite.slurm.client import JobInfo
from suite.slurm.cluster import Cluster, for_conf, unshared
from suite.slurm.errors import QueueTimeoutError, SlurmError
from suite.slurm.follow import describe_end, follow, submit
from suite.slurm.options import SlurmOptions


def test_a_job_pending_past_the_queue_timeout_is_cancelled_with_the_reason(
    slurm_cluster: Cluster, run_dir: Path
) -> None:
    client = slurm_cluster.client()
    options = SlurmOptions(python=slurm_cluster.python, sbatch_args=("--hold",), queue_timeout_s=3)
    job = submit(client, sbatch_script(options, RankCommand(InlineLaunch(), ("-c", "pass")), run_dir), run_dir)
    with pytest.raises(QueueTimeoutError, match=r"still pending after [3-9] s.*JobHeldUser.*cancelled") as caught:
        follow(client, job, queue_timeout_s=options.queue_timeout_s, poll_s=0.5)
    assert caught.value.job_id == job and caught.value.reason == "JobHeldUser" and caught.value.exit_code == 1
    info = client.job(job)
    assert info is not None and info.state == "CANCELLED"


def test_sbatch_refusing_a_job_is_a_clear_error(slurm_cluster: Cluster, run_dir: Path) -> None:
    options = SlurmOptions(partition="no-such-partition", python=slurm_cluster.python)
    script = sbatch_script(options, RankCommand(InlineLaunch(), ("-c", "pass")), run_dir)
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
        client,
        sbatch_script(SlurmOptions(python=slurm_cluster.python), RankCommand(InlineLaunch(), ()), tmp_path),
        tmp_path,
    )
    info = follow(client, job, poll_s=0.5)
    assert info.state == "FAILED"
    assert "shared" in (describe_end(info, tmp_path / f"slurm-{job}.out") or "")


def test_following_a_job_survives_a_controller_that_stops_answering_for_a_while(
    slurm_cluster: Cluster, run_dir: Path
) -> None:
    """The controller paused for 6 s (as during a restart): the follower keeps looking and sees the job end."""
    client = slurm_cluster.client()
    options = SlurmOptions(python=slurm_cluster.python)
    payload = "import time; print('payload started', flush=True); time.sleep(12)"
    script = sbatch_script(options, RankCommand(InlineLaunch(), ("-c", payload)), run_dir)
    job = submit(client, script, run_dir)
    ctl = slurm_cluster.containers[slurm_cluster.controller]
    paused: list[float] = []

    def pause_once(info: JobInfo) -> None:
        # paused once the payload runs: a controller lost while srun creates a step fails the job (Slurm's
        # behaviour, not the follower's), and the follower is what this test is about
        out = run_dir / f"slurm-{job}.out"
        started = out.is_file() and "payload started" in out.read_text()
        if info.state == "RUNNING" and started and not paused:
            subprocess.run(["docker", "pause", ctl], check=True, timeout=60)
            paused.append(time.monotonic())
            threading.Timer(6.0, subprocess.run, (["docker", "unpause", ctl],), {"timeout": 60}).start()

    try:
        info = follow(client, job, poll_s=0.5, on_poll=pause_once)
    finally:
        subprocess.run(["docker", "unpause", ctl], capture_output=True, timeout=60)
    assert paused and info.state == "COMPLETED", info
