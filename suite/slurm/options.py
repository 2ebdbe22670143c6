"""The options of a run as a Slurm job (``trainbench run ... --launcher slurm``), checked before anything starts.

The names follow sbatch's (``--nodes``, ``--ntasks-per-node``, ``--cpus-per-task``,
``--partition``, ``--time``, ``--account``, ``--gpus-per-node``); ``sbatch_args`` passes
anything else through, and ``container_image`` runs every rank in an image through
Pyxis (``srun --container-image``), as MLPerf Training's reference submissions do.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

TIME_PATTERN = re.compile(r"^([0-9]+-)?[0-9]+(:[0-9]+){0,2}$|^UNLIMITED$|^INFINITE$")
"""sbatch's --time formats: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS (and UNLIMITED)."""
NAME_PATTERN = r"^[A-Za-z0-9_.+-]+$"
GPUS_PATTERN = r"^([A-Za-z0-9_.-]+:)?[0-9]+$"

OWNED_FLAGS: dict[str, str] = {
    "--nodes": "nodes",
    "-N": "nodes",
    "--ntasks-per-node": "ntasks_per_node",
    "--ntasks": "nodes x ntasks_per_node",
    "-n": "nodes x ntasks_per_node",
    "--cpus-per-task": "cpus_per_task",
    "-c": "cpus_per_task",
    "--partition": "partition",
    "-p": "partition",
    "--time": "time",
    "-t": "time",
    "--account": "account",
    "-A": "account",
    "--gpus-per-node": "gpus_per_node",
    "--output": "(trainbench writes the job's log into the run directory)",
    "-o": "(trainbench writes the job's log into the run directory)",
    "--error": "(trainbench writes the job's log into the run directory)",
    "-e": "(trainbench writes the job's log into the run directory)",
    "--chdir": "(the job runs in the run directory)",
    "-D": "(the job runs in the run directory)",
    "--wrap": "(trainbench writes the batch script)",
    "--parsable": "(trainbench reads the job id itself)",
    "--requeue": "(a requeued run would measure again over its first attempt's files)",
}
"""sbatch flags that trainbench sets itself: a pass-through copy would contradict the typed option."""


class SlurmOptions(BaseModel):
    """How the run is submitted as a Slurm job.

    Attributes:
        nodes: nodes of the job (``--nodes``).
        ntasks_per_node: ranks per node (``--ntasks-per-node``; default one per node). With
            torchrun, one torchrun agent per node starts this many ranks.
        cpus_per_task: CPUs per rank (``--cpus-per-task``), or None for the partition's default.
        partition: the partition (``--partition``), or None for the cluster's default.
        time: the job's time limit in sbatch's syntax (``--time``), e.g. ``30``, ``1:00:00``.
        account: the account charged (``--account``).
        gpus_per_node: GPUs per node (``--gpus-per-node``), ``N`` or ``TYPE:N``.
        sbatch_args: further sbatch options, each one ``--flag`` or ``--flag=value``, written as
            ``#SBATCH`` lines (e.g. ``--exclusive``, ``--constraint=zen4``, ``--qos=high``).
        container_image: run every rank in this image through Pyxis (``srun --container-image``);
            the cluster needs the Pyxis/enroot plugin.
        container_mounts: extra Pyxis mounts ``SRC:DST[:FLAGS]`` (the run directory is always mounted).
        python: the Python interpreter on the nodes that has trainbench installed; None = this
            process's interpreter (right for a virtual environment on the shared filesystem),
            ``python`` inside a container image.
        job_name: the job's name (``--job-name``).
        queue_timeout_s: seconds the job may stay pending before it is cancelled; None = no limit.
        poll_s: seconds between two looks at the job's state.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    nodes: int = Field(1, ge=1, le=100_000)
    ntasks_per_node: int = Field(1, ge=1, le=1024)
    cpus_per_task: int | None = Field(None, ge=1, le=100_000)
    partition: str | None = Field(None, pattern=r"^[A-Za-z0-9_.,-]+$")
    time: str | None = None
    account: str | None = Field(None, pattern=NAME_PATTERN)
    gpus_per_node: str | None = Field(None, pattern=GPUS_PATTERN)
    sbatch_args: tuple[str, ...] = ()
    container_image: str | None = Field(None, pattern=r"^[A-Za-z0-9_.:/@+#-]+$")
    container_mounts: tuple[str, ...] = ()
    python: str | None = Field(None, pattern=r"^[A-Za-z0-9_./+-]+$")
    job_name: str = Field("trainbench", pattern=NAME_PATTERN, max_length=100)
    queue_timeout_s: float | None = Field(None, gt=0, allow_inf_nan=False)
    poll_s: float = Field(2.0, gt=0, le=60, allow_inf_nan=False)

    @field_validator("time")
    @classmethod
    def _time(cls, value: str | None) -> str | None:
        if value is not None and not TIME_PATTERN.match(value):
            raise ValueError(
                f"time {value!r} is not in sbatch's syntax: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS"
            )
        return value

    @field_validator("gpus_per_node", mode="before")
    @classmethod
    def _gpus(cls, value: object) -> object:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("sbatch_args")
    @classmethod
    def _sbatch_args(cls, args: tuple[str, ...]) -> tuple[str, ...]:
        for arg in args:
            if not arg.startswith("-") or any(c in arg for c in "\n\r\0"):
                raise ValueError(f"sbatch argument {arg!r}: expected one option such as --exclusive or --qos=high")
            flag = arg.split("=", 1)[0]
            if flag in OWNED_FLAGS:
                owner = OWNED_FLAGS[flag]
                how = owner if owner.startswith("(") else f"use the {owner} option"
                raise ValueError(f"sbatch argument {arg!r}: trainbench sets {flag} itself {how}")
        return args

    @field_validator("container_mounts")
    @classmethod
    def _mounts(cls, mounts: tuple[str, ...]) -> tuple[str, ...]:
        for m in mounts:
            if not re.fullmatch(r"/[^,:\s]*(:/[^,:\s]*)?(:[a-z+]+)?", m):
                raise ValueError(f"container mount {m!r}: expected /SRC[:/DST[:FLAGS]] (absolute paths)")
        return mounts

    @property
    def ntasks(self) -> int:
        """Ranks of the whole job: nodes x ntasks_per_node."""
        return self.nodes * self.ntasks_per_node
