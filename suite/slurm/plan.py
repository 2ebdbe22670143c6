"""A run's config as a Slurm job: the launch settings the job runs with, the rank command, the batch script.

The ranks per node come from ``--ntasks-per-node``, else the workload's own
``nproc_per_node``, else 1. torchrun gets ``nnodes`` = ``--nodes`` and
``nproc_per_node`` = ranks per node, Horovod ``nproc_per_node``. The ranks are not bound
to NUMA nodes as on a local run: this host's topology says nothing about the nodes', so
Slurm's allocation places them (``--cpus-per-task``, ``--sbatch-arg=--cpu-bind=...``).
Settings that name this host's CPUs, topology or hosts are refused. The allocator is
looked up on each node (:mod:`suite.slurm.node_env`), never on this host.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from suite.config import HorovodrunLaunch, InlineLaunch, RunConfig, RunCpuLaunch, TorchrunLaunch
from suite.run.allocators import JEMALLOC_CONF
from suite.run.launch import LaunchError, plan_launch
from suite.run.options import PreflightError
from suite.slurm.client import SlurmClient
from suite.slurm.cluster import Cluster, for_conf, unshared
from suite.slurm.options import SlurmOptions, SlurmRuntime
from suite.slurm.script import RankCommand, rank_command, sbatch_script


def job_config(config: RunConfig, runtime: SlurmRuntime) -> tuple[RunConfig, SlurmOptions]:
    """The run's config as the job runs it, and the job's options with the ranks per node resolved.

    Raises:
        LaunchError: a launch setting names this host's CPUs, NUMA nodes or hosts, asks for another
            node count than ``--nodes``, or the ranks per node disagree with ``--ntasks-per-node``.
    """
    launch, options = config.launch, runtime.options
    hint = "under Slurm the job's allocation places the ranks (--cpus-per-task, --sbatch-arg=--cpu-bind=...)"
    if isinstance(launch, InlineLaunch | RunCpuLaunch) and (launch.cpus or launch.numa_nodes):
        raise LaunchError(f"cpus / numa_nodes bind to this host's CPU numbers; {hint}")
    if isinstance(launch, TorchrunLaunch):
        if launch.topology is not None or launch.rdzv_endpoint is not None:
            raise LaunchError(f"topology / rdzv_endpoint describe this host and its rendezvous; {hint}")
        if launch.nnodes not in (1, options.nodes):
            raise LaunchError(f"nnodes={launch.nnodes} but --nodes {options.nodes}: give the node count once")
    if isinstance(launch, HorovodrunLaunch) and launch.hosts is not None:
        raise LaunchError(f"hosts={launch.hosts}: under Slurm the job's nodes are the hosts; drop hosts")
    own = getattr(launch, "nproc_per_node", None)
    per_node = options.ntasks_per_node if runtime.ranks_per_node_given or own is None else own
    if runtime.ranks_per_node_given and own is not None and own != per_node:
        raise LaunchError(f"nproc_per_node={own} but --ntasks-per-node {per_node}: give the ranks per node once")
    options = options.model_copy(update={"ntasks_per_node": per_node})
    if isinstance(launch, TorchrunLaunch):
        launch = launch.model_copy(update={"nnodes": options.nodes, "nproc_per_node": per_node})
    elif isinstance(launch, HorovodrunLaunch):
        launch = launch.model_copy(update={"nproc_per_node": per_node})
    return config.model_copy(update={"launch": launch}), options


def node_options(options: SlurmOptions, client: SlurmClient) -> tuple[SlurmOptions, Cluster | None]:
    """The options with the nodes' interpreter filled in from the demo cluster (when it is the one used)."""
    cluster = for_conf(client.conf)
    if cluster is not None and options.python is None and options.container_image is None:
        options = options.model_copy(update={"python": cluster.python})
    return options, cluster


def rank_for(config: RunConfig, run_dir: Path) -> RankCommand:
    """The rank command of ``config`` (one rank per slot of the job; the allocator is found on each node).

    Raises:
        LaunchError: ``malloc_conf`` without ``allocator=jemalloc``.
    """
    launch = config.launch
    if launch.malloc_conf and launch.allocator != "jemalloc":
        raise LaunchError("malloc_conf applies to allocator=jemalloc only; set allocator=jemalloc or drop malloc_conf")
    local = launch.model_copy(update={"allocator": "default", "malloc_conf": None})
    if isinstance(local, TorchrunLaunch):
        local = local.model_copy(update={"nnodes": 1})  # the script sets torchrun's own arguments
    plan = plan_launch(local, run_dir / "job.json", run_dir / "measurement.json", run_dir / "progress.jsonl")
    env = dict(plan.env_set)
    if launch.allocator != "default":  # glibc's thresholds are for glibc's malloc only
        env.pop("GLIBC_TUNABLES", None)
    if launch.allocator == "jemalloc":
        env["MALLOC_CONF"] = launch.malloc_conf or JEMALLOC_CONF
    return rank_command(plan.command, plan.launcher, env, allocator=launch.allocator)


def title(config: RunConfig, options: SlurmOptions) -> str:
    """The batch script's comment line naming the run."""
    layout = f"{options.nodes} node(s) x {options.ntasks_per_node} rank(s)"
    return f"trainbench run {config.workload} ({config.profile}): {layout}"


def dry_run_script(config: RunConfig, runtime: SlurmRuntime, run_dir: Path) -> str:
    """The batch script a run would submit with its run directory at ``run_dir`` (nothing is written).

    Raises:
        LaunchError: the launch settings do not fit a job (:func:`job_config`).
        SlurmError: the launcher cannot use the requested layout.
    """
    config, options = job_config(config, runtime)
    options, _ = node_options(options, SlurmClient())
    return sbatch_script(options, rank_for(config, run_dir), run_dir, title(config, options))


def check(config: RunConfig, runtime: SlurmRuntime, output_dir: Path) -> None:
    """What is checked before a job is submitted: the settings, the Slurm client, a shared output directory.

    Raises:
        LaunchError: the launch settings do not fit a job.
        PreflightError: no ``sbatch`` on PATH, or the demo cluster's nodes do not see ``output_dir``.
    """
    job_config(config, runtime)
    if shutil.which("sbatch") is None:
        raise PreflightError(
            "sbatch is not on PATH: submitting a job needs the Slurm client and munge on this host "
            "(Debian/Ubuntu: apt-get install slurm-client munge), or run trainbench on a login node"
        )
    cluster = for_conf(SlurmClient().conf)
    problem = unshared(cluster, output_dir) if cluster is not None else None
    if problem is not None:
        raise PreflightError(problem)
