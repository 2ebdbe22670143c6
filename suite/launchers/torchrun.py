"""``torchrun``: data-parallel ranks started by ``torch.distributed.run``.

On this host: one rank per NUMA (pseudo-)node, each bound to its node by numactl
(:mod:`suite.launchers.placement`); or, for a workload that trains on GPUs, one unbound rank
per visible GPU; or ``nproc_per_node`` unbound ranks. Across hosts: the c10d rendezvous at
``rdzv_endpoint``. Under Slurm: one torchrun agent per node (``srun --ntasks-per-node=1``),
rendezvous c10d on the job's first node, ``--nnodes=$SLURM_NNODES``, ``--nproc-per-node`` = the
ranks per node, the job id as the rendezvous id; torchrun sets RANK/WORLD_SIZE/LOCAL_RANK.
"""

from __future__ import annotations

import shutil
from typing import Literal

from pydantic import Field

from suite.launchers.base import LaunchBase, LaunchError, LaunchPlan, RankStart, SrunStep
from suite.launchers.bound import SLURM_HINT
from suite.launchers.placement import PlacementError, placement
from suite.launchers.srun import PY, Shell, line
from workloads.job import PlacementSlot

NUMACTL_FIX = (
    "binding ranks to NUMA nodes needs numactl (Debian/Ubuntu: apt-get install numactl); "
    "or set nproc_per_node=N for N unbound ranks"
)


class TorchrunLaunch(LaunchBase):
    """Data-parallel ranks started by torchrun: one per NUMA (pseudo-)node, one per GPU, or ``nproc_per_node``."""

    launcher: Literal["torchrun"] = "torchrun"
    topology: str | None = Field(
        None,
        pattern=r"^[0-9,-]+(@[0-9,-]+)?(;[0-9,-]+(@[0-9,-]+)?)*$",
        description="torchrun: NUMA nodes to use instead of sysfs's, as cpulists separated by ';', each "
        "optionally @memory-nodes, e.g. '0;1' = two pseudo-nodes of one core each",
    )
    nnodes: int = Field(1, ge=1, description="torchrun: number of hosts")
    nproc_per_node: int | None = Field(
        None,
        ge=1,
        le=1024,
        description="torchrun: ranks on this host, unbound; without it one rank per visible GPU for a GPU "
        "workload, else one per NUMA node",
    )
    rdzv_endpoint: str | None = Field(None, description="torchrun: host:port of the c10d rendezvous (nnodes > 1)")
    rdzv_id: str = Field("trainbench", pattern=r"^[A-Za-z0-9_.-]+$", description="torchrun: rendezvous id")
    compare_single: bool = Field(
        True,
        description="torchrun with NUMA placement: also measure one process on all cores with the same global batch",
    )

    def host_count(self) -> int:
        """``nnodes``: every host runs the same command and joins the c10d rendezvous."""
        return self.nnodes

    def ranks_per_host(self) -> int | None:
        """``nproc_per_node``."""
        return self.nproc_per_node

    def on_one_host(self) -> LaunchBase:
        """``nnodes=1``."""
        return self.model_copy(update={"nnodes": 1})

    def _slots(self, start: RankStart) -> tuple[list[PlacementSlot], int]:
        """The NUMA slots (empty when unbound) and the ranks on this host.

        Raises:
            LaunchError: both ``nproc_per_node`` and ``topology``, or a topology that cannot be placed here.
        """
        if self.nproc_per_node is not None:
            if self.topology is not None:
                raise LaunchError("set either nproc_per_node (unbound ranks, e.g. one per GPU) or topology, not both")
            return [], self.nproc_per_node
        if start.gpus > 0 and self.topology is None:  # a GPU workload: one unbound rank per visible GPU
            return [], start.gpus
        try:
            slots = placement(self.topology)
        except PlacementError as exc:
            raise LaunchError(str(exc)) from exc
        return slots, len(slots)

    def check_local(self, start: RankStart) -> None:
        """NUMA placement binds each rank with numactl, so numactl must be installed.

        Raises:
            LaunchError: the ranks would be bound and numactl is missing (the message gives both fixes).
        """
        slots, _ = self._slots(start)
        if slots and shutil.which("numactl") is None:
            raise LaunchError(NUMACTL_FIX)

    def local_plan(self, start: RankStart, env: dict[str, str]) -> LaunchPlan:
        """``python -m torch.distributed.run --nproc-per-node=N`` (``--standalone`` on one host).

        Raises:
            LaunchError: a bad layout (see :meth:`_slots`), or ``nnodes > 1`` without ``rdzv_endpoint``.
        """
        slots, nproc = self._slots(start)
        cmd = [start.python, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}"]
        if self.nnodes == 1:
            cmd.append("--standalone")
        elif not self.rdzv_endpoint:
            raise LaunchError(f"nnodes={self.nnodes} needs rdzv_endpoint=HOST:PORT (the c10d rendezvous)")
        else:
            cmd += [
                f"--nnodes={self.nnodes}",
                "--rdzv-backend=c10d",
                f"--rdzv-endpoint={self.rdzv_endpoint}",
                f"--rdzv-id={self.rdzv_id}",
            ]
        return LaunchPlan(
            command=[*cmd, *start.args], env_set=env, launcher=self.launcher, placement=slots, processes=nproc
        )

    def for_slurm(self, nodes: int, ranks_per_node: int) -> LaunchBase:
        """``nnodes`` = the job's nodes, ``nproc_per_node`` = its ranks per node.

        Raises:
            LaunchError: ``topology`` or ``rdzv_endpoint`` (this host's), or ``nnodes`` other than the job's.
        """
        if self.topology is not None or self.rdzv_endpoint is not None:
            raise LaunchError(f"topology / rdzv_endpoint describe this host and its rendezvous; {SLURM_HINT}")
        if self.nnodes not in (1, nodes):
            raise LaunchError(f"nnodes={self.nnodes} but --nodes {nodes}: give the node count once")
        return self.model_copy(update={"nnodes": nodes, "nproc_per_node": ranks_per_node})

    def slurm_steps(self, step: SrunStep) -> list[str]:
        """One torchrun agent per node, rendezvous c10d at ``$HEAD:$PORT``."""
        k = step.ranks_per_node
        cpus = [f"--cpus-per-task={k * step.cpus_per_task}"] if step.cpus_per_task else []
        torchrun = [
            PY,
            "-m",
            "torch.distributed.run",
            Shell('--nnodes="$SLURM_NNODES"'),
            f"--nproc-per-node={k}",
            "--rdzv-backend=c10d",
            Shell('--rdzv-endpoint="$HEAD:$PORT"'),
            Shell('--rdzv-id="$SLURM_JOB_ID"'),
        ]
        srun = [*step.srun, Shell('--ntasks="$SLURM_NNODES"'), "--ntasks-per-node=1", *cpus, "--label"]
        return [line([*srun, *step.preload, *torchrun, *step.rank_args])]

    def compares_single(self) -> bool:
        """``compare_single``."""
        return self.compare_single
