"""``--runtime slurm`` (also ``--launcher slurm``): the run as a Slurm job, supervised from the submitting host.

The job runs the same rank as a local run, started on its nodes by the launcher's Slurm plan.
The ranks per node come from ``--ntasks-per-node``, else the workload's own
``nproc_per_node``, else 1; the launcher then takes the job's layout
(:meth:`suite.launchers.base.LaunchBase.for_slurm`: torchrun gets ``nnodes`` = ``--nodes`` and
``nproc_per_node`` = ranks per node, Horovod ``nproc_per_node``). The ranks are not bound to
NUMA nodes as on a local run: this host's topology says nothing about the nodes', so Slurm's
allocation places them (``--cpus-per-task``, ``--sbatch-arg=--cpu-bind=...``). Settings that
name this host's CPUs, topology or hosts are refused. The allocator is looked up on each node
(:mod:`suite.slurm.node_env`), never on this host.
"""

from __future__ import annotations

import dataclasses
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from suite.config import RunConfig
from suite.errors import PreflightError
from suite.launchers import LaunchError, rank_env
from suite.launchers.allocators import JEMALLOC_CONF
from suite.runtimes.base import Comparison, Ran, RunContext
from suite.runtimes.slurm_follow import JobRun, launch_job
from suite.runtimes.slurm_result import with_job
from suite.runtimes.slurm_script import RankCommand, job_rank, sbatch_script
from suite.slurm.client import SlurmClient
from suite.slurm.options import SlurmOptions

if TYPE_CHECKING:
    from suite.results import Result
    from suite.slurm.cluster import Cluster


def node_options(options: SlurmOptions, client: SlurmClient) -> tuple[SlurmOptions, Cluster | None]:
    """The options with the nodes' interpreter filled in from the demo cluster (when it is the one used)."""
    from suite.slurm.cluster import for_conf  # the demo cluster's side imports the Docker SDK

    cluster = for_conf(client.conf)
    if cluster is not None and options.python is None and options.container_image is None:
        options = options.model_copy(update={"python": cluster.python})
    return options, cluster


def rank_for(config: RunConfig, run_dir: Path) -> RankCommand:
    """The rank command of ``config`` (the job's config) for the nodes: no host library path in it.

    The allocator's library is found on each node (:mod:`suite.slurm.node_env`); glibc's pinned
    thresholds go with glibc's malloc only; jemalloc gets its ``MALLOC_CONF``.

    Raises:
        LaunchError: ``malloc_conf`` without ``allocator=jemalloc``.
    """
    launch = config.launch
    if launch.malloc_conf and launch.allocator != "jemalloc":
        raise LaunchError("malloc_conf applies to allocator=jemalloc only; set allocator=jemalloc or drop malloc_conf")
    env = rank_env(launch.model_copy(update={"allocator": "default", "malloc_conf": None}))
    if launch.allocator != "default":  # glibc's thresholds are for glibc's malloc only
        env.pop("GLIBC_TUNABLES", None)
    if launch.allocator == "jemalloc":
        env["MALLOC_CONF"] = launch.malloc_conf or JEMALLOC_CONF
    return job_rank(launch, run_dir, env)


def title(config: RunConfig, options: SlurmOptions) -> str:
    """The batch script's comment line naming the run."""
    layout = f"{options.nodes} node(s) x {options.ntasks_per_node} rank(s)"
    return f"trainbench run {config.workload} ({config.profile}): {layout}"


@dataclass(frozen=True)
class SlurmRuntime:
    """``trainbench run --runtime slurm`` (also spelt ``--launcher slurm``): the run is submitted as a Slurm job.

    Attributes:
        options: the job's options as given.
        ranks_per_node_given: ``--ntasks-per-node`` was given; otherwise the workload's own
            ``nproc_per_node`` (when set) gives the ranks per node, else 1.
        dry_run: print the batch script and submit nothing.
    """

    options: SlurmOptions
    ranks_per_node_given: bool = False
    dry_run: bool = False
    name: str = "slurm"

    def job_options(self, config: RunConfig) -> SlurmOptions:
        """The job's options with the ranks per node resolved (``--ntasks-per-node``, else the launcher's own).

        Raises:
            LaunchError: the ranks per node disagree with ``--ntasks-per-node``.
        """
        own = config.launch.ranks_per_host()
        per_node = self.options.ntasks_per_node if self.ranks_per_node_given or own is None else own
        if self.ranks_per_node_given and own is not None and own != per_node:
            raise LaunchError(f"nproc_per_node={own} but --ntasks-per-node {per_node}: give the ranks per node once")
        return self.options.model_copy(update={"ntasks_per_node": per_node})

    def job_config(self, config: RunConfig) -> RunConfig:
        """The run's config as the job runs it: the launcher takes the job's nodes and ranks per node.

        Raises:
            LaunchError: a launch setting names this host's CPUs, NUMA nodes or hosts, asks for another
                node count than ``--nodes``, or the ranks per node disagree with ``--ntasks-per-node``.
        """
        options = self.job_options(config)
        launch = config.launch.for_slurm(options.nodes, options.ntasks_per_node)
        return config.model_copy(update={"launch": launch})

    def preflight(self, config: RunConfig, output_dir: Path) -> None:
        """The Slurm client is here, and the demo cluster's nodes see ``output_dir`` (the ranks' GPUs
        and tools are the nodes', checked there).

        Raises:
            PreflightError: no ``sbatch`` on PATH, or the demo cluster's nodes do not see ``output_dir``.
        """
        if shutil.which("sbatch") is None:
            raise PreflightError(
                "sbatch is not on PATH: submitting a job needs the Slurm client and munge on this host "
                "(Debian/Ubuntu: apt-get install slurm-client munge), or run trainbench on a login node"
            )
        from suite.slurm.cluster import for_conf, unshared  # the demo cluster's side imports the Docker SDK

        cluster = for_conf(SlurmClient().conf)
        problem = unshared(cluster, output_dir) if cluster is not None else None
        if problem is not None:
            raise PreflightError(problem)

    def script(
        self, config: RunConfig, run_dir: Path, client: SlurmClient | None = None
    ) -> tuple[str, SlurmOptions, RankCommand]:
        """The batch script of ``config`` (the job's config) with its run directory at ``run_dir``, the
        options it is submitted with, and the rank it starts.

        Raises:
            LaunchError: the launch settings do not fit the job.
            suite.slurm.errors.SlurmError: the launcher cannot use the requested layout.
        """
        options, _ = node_options(self.job_options(config), client or SlurmClient())
        rank = rank_for(config, run_dir)
        return sbatch_script(options, rank, run_dir, title(config, options)), options, rank

    def dry_run_script(self, config: RunConfig, run_dir: Path) -> str:
        """The batch script a run of ``config`` would submit with its run directory at ``run_dir`` (nothing written).

        Raises:
            LaunchError: the launch settings do not fit a job.
            suite.slurm.errors.SlurmError: the launcher cannot use the requested layout.
        """
        return self.script(self.job_config(config), run_dir)[0]

    def run(self, config: RunConfig, run_dir: Path, ctx: RunContext) -> Ran:
        """Submit the job, follow it to its end, and read back what its ranks measured.

        Raises:
            suite.slurm.errors.SlurmError: sbatch refused the job (nothing ran), or the controller stopped answering.
        """
        client = SlurmClient()
        script, options, rank = self.script(config, run_dir, client)
        job = launch_job(client, config, run_dir, script, options, rank, ctx)
        return Ran(job.measurement, job.plan, job.code, job)

    def annotate(self, result: Result, ran: Ran, run_dir: Path, system: str | None) -> Result:
        """``result`` with its job (``runtime.slurm``) and its nodes (``nodes``)."""
        assert isinstance(ran.record, JobRun)
        return with_job(result, ran.record, run_dir, system)

    def comparison(self, config: RunConfig, ran: Ran) -> Comparison | str | None:
        """The same job on one node (same per-rank batch), after a job on several nodes whose launcher
        compares (torchrun's ``compare_single``): its N-node scaling efficiency."""
        nodes = self.options.nodes
        if nodes <= 1 or not config.launch.compares_single():
            return None
        one = dataclasses.replace(self, options=self.options.model_copy(update={"nodes": 1}))
        one_config = one.job_config(config.model_copy(update={"launch": config.launch.on_one_host()}))
        return Comparison(
            one_config,
            one,
            "one-node",
            "the one-node comparison",
            nodes=nodes,
            announce=f"the same job on one node, for the {nodes}-node scaling efficiency "
            "(compare_single=false skips it)",
        )
