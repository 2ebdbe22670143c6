"""Real Slurm jobs on the demo cluster, submitted from this host: ranks on two nodes talk over the network.

Each job's batch script is the one trainbench generates (:func:`suite.slurm.script.sbatch_script`);
the ranks are real processes in the workload image on two containers with their own
network stacks, rendezvousing by torchrun's c10d or Horovod's Gloo rendezvous.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from suite.slurm.cluster import Cluster
from suite.slurm.follow import describe_end, follow, submit
from suite.slurm.identity import job_identity, node_systems
from suite.slurm.options import SlurmOptions
from suite.slurm.script import RankCommand, sbatch_script
from tests.slurm.conftest import measurement, rank_job

ALL_REDUCE = """
import json, os, socket, sys
from pathlib import Path
import torch
import torch.distributed as dist
dist.init_process_group("gloo")
value = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(value)
host = socket.gethostname()
out = {"rank": dist.get_rank(), "world": dist.get_world_size(), "host": host, "sum": value.item(),
       "address": socket.gethostbyname(host), "master": os.environ["MASTER_ADDR"]}
Path(sys.argv[1], f"rank{dist.get_rank()}.json").write_text(json.dumps(out))
dist.destroy_process_group()
"""

HOROVOD_ALL_REDUCE = """
import json, socket, sys
from pathlib import Path
import torch
import horovod.torch as hvd
hvd.init()
value = hvd.allreduce(torch.tensor([float(hvd.rank() + 1)]), op=hvd.Sum)
out = {"rank": hvd.rank(), "size": hvd.size(), "local_rank": hvd.local_rank(), "cross_rank": hvd.cross_rank(),
       "host": socket.gethostname(), "sum": value.item(), "gloo": hvd.gloo_enabled()}
Path(sys.argv[1], f"rank{hvd.rank()}.json").write_text(json.dumps(out))
hvd.shutdown()
"""


def _run(cluster: Cluster, run_dir: Path, rank: RankCommand, options: SlurmOptions | None = None) -> tuple[str, float]:
    """Submit the generated script and follow it to its end: (final state, seconds)."""
    opts = options or SlurmOptions(nodes=2, python=cluster.python, poll_s=0.5)
    client = cluster.client()
    start = time.monotonic()
    job = submit(client, sbatch_script(opts, rank, run_dir, "test"), run_dir)
    info = follow(client, job, poll_s=opts.poll_s)
    log = run_dir / f"slurm-{job}.out"
    assert info.state == "COMPLETED", f"{describe_end(info, log)}\n{log.read_text() if log.exists() else ''}"
    return job, time.monotonic() - start


def _ranks(run_dir: Path) -> list[dict[str, object]]:
    return [json.loads((run_dir / f"rank{r}.json").read_text()) for r in range(2)]


def test_torchrun_ranks_on_two_nodes_all_reduce_over_the_network(slurm_cluster: Cluster, run_dir: Path) -> None:
    script = run_dir / "all_reduce.py"
    script.write_text(ALL_REDUCE)
    job, seconds = _run(slurm_cluster, run_dir, RankCommand("torchrun", (str(script), str(run_dir))))
    print(f"torchrun all_reduce job {job}: submit to end {seconds:.1f} s")
    ranks = _ranks(run_dir)
    assert {r["host"] for r in ranks} == {"n1", "n2"}
    assert [r["sum"] for r in ranks] == [3.0, 3.0] and {r["world"] for r in ranks} == {2}
    assert ranks[0]["address"] != ranks[1]["address"], "two network stacks: the sum crossed the bridge network"


def test_horovod_gloo_ranks_on_two_nodes_without_ssh(slurm_cluster: Cluster, run_dir: Path) -> None:
    script = run_dir / "hvd_all_reduce.py"
    script.write_text(HOROVOD_ALL_REDUCE)
    job, seconds = _run(slurm_cluster, run_dir, RankCommand("horovodrun", (str(script), str(run_dir))))
    print(f"Horovod all_reduce job {job}: submit to end {seconds:.1f} s")
    ranks = _ranks(run_dir)
    assert {r["host"] for r in ranks} == {"n1", "n2"}
    assert [r["sum"] for r in ranks] == [3.0, 3.0] and all(r["gloo"] for r in ranks)
    assert sorted((r["cross_rank"], r["local_rank"], r["size"]) for r in ranks) == [(0, 0, 2), (1, 0, 2)]
    assert "Horovod rendezvous on n1" in (run_dir / "hvd-rendezvous.log").read_text()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("workload", "overrides"),
    [("numa-ddp", ["compare_single=false"]), ("resnet50-gpu-horovod", ["device=cpu"])],
)
def test_workload_ranks_on_two_nodes_gather_one_measurement(
    slurm_cluster: Cluster, run_dir: Path, workload: str, overrides: list[str]
) -> None:
    rank = rank_job(run_dir, workload, overrides)
    job, seconds = _run(slurm_cluster, run_dir, rank)
    print(f"{workload} on 2 nodes, job {job}: submit to end {seconds:.1f} s")
    m = measurement(run_dir)
    assert m["complete"] is True and m["error"] is None and m["world_size"] == 2
    hosts = {r["rank"]: r["system"]["host"]["hostname"] for r in m["ranks"]}
    assert hosts == {0: "n1", 1: "n2"} or hosts == {0: "n2", 1: "n1"}
    assert all(len([s for s in r["steps"] if s["phase"] == "measurement"]) == 3 for r in m["ranks"])
    nodes = node_systems(m["ranks"])
    assert [n["hostname"] for n in nodes["nodes"]] == [hosts[0], hosts[1]]
    assert nodes["heterogeneous"] is False, nodes["differences"]
    info = slurm_cluster.client().job(job)
    assert info is not None
    identity = job_identity(info, slurm_cluster.client().hostnames(info.nodelist or ""), slurm_cluster.name)
    assert identity["job_id"] == job and identity["nodes"] == ["n1", "n2"] and identity["num_nodes"] == 2
    assert identity["partition"] == "debug" and identity["nodelist"] == "n[1-2]"
