"""Real Slurm jobs on the demo cluster, submitted from this host: ranks on two nodes talk over the network.

Each job's batch script is the one trainbench generates (:func:`suite.runtimes.slurm_script.sbatch_script`);
the ranks are real processes in the workload image on two containers with their own
network stacks, rendezvousing by torchrun's c10d or Horovod's Gloo rendezvous.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from suite.launchers import HorovodrunLaunch, TorchrunLaunch
from suite.runtimes.slurm_script import RankCommand, sbatch_script
from suite.slurm.cluster import Cluster
from suite.slurm.follow import describe_end, follow, submit
from suite.slurm.options import SlurmOptions

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
    job, seconds = _run(slurm_cluster, run_dir, RankCommand(TorchrunLaunch(), (str(script), str(run_dir))))
    print(f"torchrun all_reduce job {job}: submit to end {seconds:.1f} s")
    ranks = _ranks(run_dir)
    assert {r["host"] for r in ranks} == {"n1", "n2"}
    assert [r["sum"] for r in ranks] == [3.0, 3.0] and {r["world"] for r in ranks} == {2}
    assert ranks[0]["address"] != ranks[1]["address"], "two network stacks: the sum crossed the bridge network"


def test_horovod_gloo_ranks_on_two_nodes_without_ssh(slurm_cluster: Cluster, run_dir: Path) -> None:
    script = run_dir / "hvd_all_reduce.py"
    script.write_text(HOROVOD_ALL_REDUCE)
    job, seconds = _run(slurm_cluster, run_dir, RankCommand(HorovodrunLaunch(), (str(script), str(run_dir))))
    print(f"Horovod all_reduce job {job}: submit to end {seconds:.1f} s")
    ranks = _ranks(run_dir)
    assert {r["host"] for r in ranks} == {"n1", "n2"}
    assert [r["sum"] for r in ranks] == [3.0, 3.0] and all(r["gloo"] for r in ranks)
    assert sorted((r["cross_rank"], r["local_rank"], r["size"]) for r in ranks) == [(0, 0, 2), (1, 0, 2)]
    assert "Horovod rendezvous on n1" in (run_dir / "hvd-rendezvous.log").read_text()
