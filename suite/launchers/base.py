"""What every launcher is: the settings all of them have, the rank's environment, the launch plan,
and the hooks each launcher module fills in (its local plan and its Slurm plan).

A launcher says HOW the ranks start (one process, ``torch.backends.xeon.run_cpu``, torchrun,
horovodrun); a runtime (``suite.runtimes``) says WHERE (this host, a container, a Slurm job).
Each launcher is one module of this package: its config variant (a subclass of
:class:`LaunchBase`) carries its own settings and its own behaviour, so no caller tells
launchers apart with ``isinstance`` or by name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from suite.errors import BadInput
from workloads.job import PlacementSlot

CPULIST = r"^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$"
"""A Linux cpulist/nodelist such as ``0-3,8``."""


class LaunchError(BadInput, RuntimeError):
    """The requested launch environment cannot be set up (e.g. a missing allocator or numactl)."""


@dataclass
class LaunchPlan:
    """A command and the environment changes it runs with.

    Attributes:
        command: argv of the rank process (or of its launcher, or of ``docker run``).
        env_set: variables set on top of the caller's environment.
        launcher: ``inline``, ``run_cpu``, ``torchrun`` or ``horovodrun``.
        runtime: ``local``, ``docker`` or ``slurm``: where the command runs.
        image: container image name, when the runtime is a container.
        image_id: container image id (``sha256:...``), when the runtime is a container.
        placement: torchrun: one slot per local rank (:mod:`suite.launchers.placement`), written into the job.
        processes: ranks the launcher starts (all hosts for horovodrun, this host for torchrun).
    """

    command: list[str]
    env_set: dict[str, str] = field(default_factory=dict)
    launcher: str = "inline"
    runtime: str = "local"
    image: str | None = None
    image_id: str | None = None
    placement: list[PlacementSlot] = field(default_factory=list)
    processes: int = 1

    def environ(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The full environment: ``base`` (default ``os.environ``) plus ``env_set``."""
        env = dict(os.environ if base is None else base)
        env.update(self.env_set)
        return env


@dataclass(frozen=True)
class RankStart:
    """How the rank process is started on this host.

    Attributes:
        python: the interpreter.
        args: the rank's arguments after it: ``-m workloads.rank --job ... --out ... [--progress ...]``.
        gpus: GPUs visible here to a workload that trains on them (0 for a CPU workload), which
            is what a launcher that starts one rank per GPU counts.
    """

    python: str
    args: list[str]
    gpus: int = 0


@dataclass(frozen=True)
class SrunStep:
    """What a launcher's Slurm plan starts its ranks with, on the job's nodes.

    Attributes:
        srun: ``srun`` and the options every step has (export, kill-on-bad-exit, the Pyxis container).
        nodes: nodes of the job.
        ranks_per_node: ranks on each node.
        cpus_per_task: CPUs per rank, or None for the partition's default.
        preload: the node-side allocator lookup that starts the rank's process (empty for the default).
        rank_args: ``-m workloads.rank --job ... --out ... [--progress ...]``.
    """

    srun: list[str]
    nodes: int
    ranks_per_node: int
    cpus_per_task: int | None
    preload: list[str]
    rank_args: list[str]


def _launcher_required(schema: dict[str, Any]) -> None:
    """In the JSON Schema, ``launcher`` is required: it is what tells the variants apart."""
    schema["required"] = sorted({"launcher", *schema.get("required", [])})


class LaunchBase(BaseModel):
    """The settings of every launcher (allocator, OpenMP environment, memory limit, hang timeouts) and the
    hooks each launcher implements.

    ``None`` leaves a setting to the library default (and to the caller's environment).
    """

    model_config = ConfigDict(extra="forbid", json_schema_extra=_launcher_required)

    launcher: str
    allocator: Literal["default", "jemalloc", "tcmalloc"] = "default"
    malloc_conf: str | None = Field(None, description="MALLOC_CONF for jemalloc")
    omp_num_threads: int | None = Field(None, ge=1)
    kmp_blocktime: int | None = Field(None, ge=0)
    kmp_affinity: str | None = None
    omp_proc_bind: str | None = None
    omp_places: str | None = None
    memory_limit_mb: int | None = Field(
        None, ge=256, description="address-space limit (RLIMIT_AS) of the rank, MiB; exceeding it is an OOM error"
    )
    startup_timeout_s: float = Field(
        1800.0,
        gt=0,
        allow_inf_nan=False,
        description="seconds from launch to the first finished step (imports, model build, compilation) before "
        "a rank counts as hung",
    )
    stall_timeout_s: float = Field(
        600.0,
        gt=0,
        allow_inf_nan=False,
        description="seconds between two finished steps before a rank counts as hung",
    )

    starts_one_rank: ClassVar[bool] = False
    """The launcher starts exactly one rank (a Slurm job of it has one task)."""

    def host_count(self) -> int:
        """Hosts whose ranks this launcher starts from this command (1 unless torchrun's ``nnodes``)."""
        return 1

    def on_one_host(self) -> LaunchBase:
        """These settings for the ranks of one host only (default: unchanged)."""
        return self

    def ranks_per_host(self) -> int | None:
        """The ranks per host asked for (``nproc_per_node``), or None for the launcher's default."""
        return None

    def local_plan(self, start: RankStart, env: dict[str, str]) -> LaunchPlan:
        """The command that starts this launcher's ranks on this host, with ``env`` set on top.

        Raises:
            LaunchError: the launch cannot be made here (a missing CPU, node or tool).
        """
        raise LaunchError(f"launcher {self.launcher!r} has no local plan")

    def check_local(self, start: RankStart) -> None:
        """What this launcher needs on this host, checked before a local run starts (default: nothing).

        Raises:
            LaunchError: a tool it needs is missing; the message says how to install it or what to change.
        """
        return None

    def for_slurm(self, nodes: int, ranks_per_node: int) -> LaunchBase:
        """These settings as a Slurm job runs them: ``nodes`` nodes of ``ranks_per_node`` ranks.

        Settings that name this host's CPUs, NUMA nodes, topology or hosts are refused: the
        job's allocation places the ranks on the nodes.

        Raises:
            LaunchError: a setting names this host, or contradicts the job's layout.
        """
        return self

    def slurm_steps(self, step: SrunStep) -> list[str]:
        """The batch script's lines that start this launcher's ranks on the job's nodes.

        Raises:
            LaunchError: the launcher cannot run under Slurm.
        """
        raise LaunchError(f"launcher {self.launcher!r} cannot run under Slurm")

    def compares_single(self) -> bool:
        """Whether a complete run is followed by the same global batch in one process (or on one node),
        for its scaling efficiency (torchrun's ``compare_single``)."""
        return False

    def binds_memory(self) -> bool:
        """Whether the rank binds its memory to NUMA nodes (numactl ``--membind``), which a container
        allows only with ``CAP_SYS_NICE``."""
        return False


def openmp_env(launch: LaunchBase) -> dict[str, str]:
    """The OpenMP variables ``launch`` sets (``OMP_NUM_THREADS``, ``KMP_BLOCKTIME``, ...): only those given."""
    env: dict[str, str] = {}
    for key, value in (
        ("OMP_NUM_THREADS", launch.omp_num_threads),
        ("KMP_BLOCKTIME", launch.kmp_blocktime),
        ("KMP_AFFINITY", launch.kmp_affinity),
        ("OMP_PROC_BIND", launch.omp_proc_bind),
        ("OMP_PLACES", launch.omp_places),
    ):
        if value is not None:
            env[key] = str(value)
    return env
