"""The launchers of one rank that numactl can bind to CPUs and NUMA nodes (``inline``, ``run_cpu``)."""

from __future__ import annotations

import os
import shutil
from typing import ClassVar

from pydantic import Field, field_validator

from harness.system import numa_topology, parse_cpulist
from suite.launchers.base import CPULIST, LaunchBase, LaunchError, LaunchPlan, RankStart, SrunStep
from suite.launchers.srun import PY, line

SLURM_HINT = "under Slurm the job's allocation places the ranks (--cpus-per-task, --sbatch-arg=--cpu-bind=...)"
"""What to use instead of a setting that names this host's CPUs, nodes or hosts, in a Slurm job."""


def binding_prefix(
    launch: BoundLaunch, available_cpus: set[int] | None = None, numa_nodes: list[int] | None = None
) -> list[str]:
    """``numactl`` arguments that bind the rank to ``launch.cpus`` / ``launch.numa_nodes`` (empty if neither).

    Args:
        available_cpus: CPUs this process may use (default ``os.sched_getaffinity(0)``).
        numa_nodes: NUMA node ids of the machine (default: from sysfs).

    Raises:
        LaunchError: a requested CPU or node does not exist here, or numactl is missing.
    """
    if launch.cpus is None and launch.numa_nodes is None:
        return []
    cmd = ["numactl"]
    if launch.numa_nodes is not None:
        nodes = set(parse_cpulist(launch.numa_nodes))
        known = [n["node"] for n in numa_topology()] if numa_nodes is None else numa_nodes
        missing = sorted(nodes - set(known))
        if missing:
            raise LaunchError(
                f"NUMA node(s) {missing} requested but this machine has node(s) {known or 'none in sysfs'}; "
                f"set numa_nodes to one of them"
            )
        cmd += [f"--cpunodebind={launch.numa_nodes}", f"--membind={launch.numa_nodes}"]
    if launch.cpus is not None:
        cpus = set(parse_cpulist(launch.cpus))
        allowed = os.sched_getaffinity(0) if available_cpus is None else available_cpus
        missing = sorted(cpus - allowed)
        if missing:
            raise LaunchError(
                f"CPU(s) {missing} requested but this process may use CPUs {sorted(allowed)}; change cpus"
            )
        cmd.append(f"--physcpubind={launch.cpus}")
    if shutil.which("numactl") is None:
        raise LaunchError("CPU/NUMA binding needs numactl (Debian/Ubuntu: apt-get install numactl)")
    return cmd


class BoundLaunch(LaunchBase):
    """A launcher of one rank that numactl can bind to CPUs and NUMA nodes."""

    starts_one_rank: ClassVar[bool] = True

    cpus: str | None = Field(None, pattern=CPULIST, description="cpulist to bind the rank to, e.g. 0-3,8")
    numa_nodes: str | None = Field(None, pattern=CPULIST, description="NUMA nodes for CPUs and memory, e.g. 0")

    @field_validator("cpus", "numa_nodes", mode="before")
    @classmethod
    def _single_id(cls, value: object) -> object:
        """Accept a bare id (``--set numa_nodes=1`` parses as an int) as a one-element list."""
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    def rank_head(self, python: str) -> list[str]:
        """The argv before the rank's arguments (without a binding), with ``python`` as the interpreter."""
        return [python]

    def local_plan(self, start: RankStart, env: dict[str, str]) -> LaunchPlan:
        """The rank, bound by numactl when ``cpus`` or ``numa_nodes`` is set.

        Raises:
            LaunchError: a requested CPU or node does not exist here, or numactl is missing.
        """
        command = [*binding_prefix(self), *self.rank_head(start.python), *start.args]
        return LaunchPlan(command=command, env_set=env, launcher=self.launcher)

    def for_slurm(self, nodes: int, ranks_per_node: int) -> LaunchBase:
        """Unchanged, unless it binds to this host's CPU or node numbers (refused).

        Raises:
            LaunchError: ``cpus`` or ``numa_nodes`` is set.
        """
        if self.cpus or self.numa_nodes:
            raise LaunchError(f"cpus / numa_nodes bind to this host's CPU numbers; {SLURM_HINT}")
        return self

    def slurm_steps(self, step: SrunStep) -> list[str]:
        """One task on the job's one node (the runtime refuses a job of more ranks first)."""
        return [line([*step.srun, "--ntasks=1", *step.preload, *self.rank_head(PY), *step.rank_args])]

    def binds_memory(self) -> bool:
        """True with ``numa_nodes`` (numactl ``--membind``)."""
        return self.numa_nodes is not None
