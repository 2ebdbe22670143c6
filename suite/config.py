"""The resolved configuration of one run: windows, launch settings and workload params.

Launch settings are one typed variant per launcher, as optimum-benchmark's launcher
configs are: a variant holds the settings every launcher has (allocator, OpenMP,
memory limit, hang timeouts) and only those of its own launcher, so a setting that does
not apply (``topology`` for ``inline``) cannot be set at all:

============  ====================================================================
launcher      its own settings
============  ====================================================================
inline        ``cpus``, ``numa_nodes`` (numactl binding of the one rank)
run_cpu       ``cpus``, ``numa_nodes`` (as inline, under torch.backends.xeon.run_cpu)
torchrun      ``topology``, ``nnodes``, ``nproc_per_node``, ``rdzv_endpoint``,
              ``rdzv_id``, ``compare_single``
horovodrun    ``nproc_per_node``, ``hosts``
============  ====================================================================

Adding a launcher is one class here, one entry in :data:`LAUNCHERS` and its branch in
``suite.run.launch.plan_launch``. Where the rank runs (on the host, or inside
``docker run``) is the runtime, not a launcher: every launcher runs in every runtime
(``suite.commands.options``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

CPULIST = r"^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$"
"""A Linux cpulist/nodelist such as ``0-3,8``."""


class WindowsConfig(BaseModel):
    """Warm-up and measurement windows (each ends when BOTH minimums are met)."""

    model_config = ConfigDict(extra="forbid")

    warmup_steps: int = Field(ge=1, description="minimum warm-up steps")
    warmup_seconds: float = Field(ge=0, allow_inf_nan=False, description="minimum warm-up seconds")
    measure_steps: int = Field(ge=1, description="minimum measured steps")
    measure_seconds: float = Field(ge=0, allow_inf_nan=False, description="minimum measured seconds")
    repeats: int = Field(1, ge=1, le=1000, description="warm-up + measurement pairs")
    sampler_interval_s: float = Field(0.5, gt=0, le=60, allow_inf_nan=False, description="utilization sampling period")
    budget_s: float | None = Field(
        None,
        gt=0,
        allow_inf_nan=False,
        description="time budget in seconds from the command's start to the end of the measurement: the harness "
        "measures the step time in the first warm-up steps and lowers the step counts to fit (harness.budget); "
        "unset: the windows run as given",
    )
    budget_floor_steps: int = Field(
        10, ge=4, le=100_000, description="measured steps, over all repeats, that the budget may not cut below"
    )


def _launcher_required(schema: dict[str, Any]) -> None:
    """In the JSON Schema, ``launcher`` is required: it is what tells the variants apart."""
    schema["required"] = sorted({"launcher", *schema.get("required", [])})


class LaunchBase(BaseModel):
    """The settings of every launcher: allocator, OpenMP environment, memory limit, hang timeouts.

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

    def host_count(self) -> int:
        """Hosts whose ranks this launcher starts from this command (1 unless torchrun's ``nnodes``)."""
        return 1


class _BoundLaunch(LaunchBase):
    """A launcher of one rank that numactl can bind to CPUs and NUMA nodes."""

    cpus: str | None = Field(None, pattern=CPULIST, description="cpulist to bind the rank to, e.g. 0-3,8")
    numa_nodes: str | None = Field(None, pattern=CPULIST, description="NUMA nodes for CPUs and memory, e.g. 0")

    @field_validator("cpus", "numa_nodes", mode="before")
    @classmethod
    def _single_id(cls, value: object) -> object:
        """Accept a bare id (``--set numa_nodes=1`` parses as an int) as a one-element list."""
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


class InlineLaunch(_BoundLaunch):
    """One rank, ``python -m workloads.rank``, optionally under numactl."""

    launcher: Literal["inline"] = "inline"


class RunCpuLaunch(_BoundLaunch):
    """One rank under ``torch.backends.xeon.run_cpu`` (its core binding and thread settings)."""

    launcher: Literal["run_cpu"] = "run_cpu"


class TorchrunLaunch(LaunchBase):
    """Data-parallel ranks started by torchrun: one per NUMA (pseudo-)node, or ``nproc_per_node`` unbound."""

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
        description="torchrun: ranks on this host, unbound (e.g. one per GPU); without it one rank per NUMA node",
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


class HorovodrunLaunch(LaunchBase):
    """Data-parallel ranks started by ``horovodrun --gloo`` (Horovod's own launcher)."""

    launcher: Literal["horovodrun"] = "horovodrun"
    nproc_per_node: int | None = Field(
        None,
        ge=1,
        le=1024,
        description="horovodrun: ranks on this host (default: one per visible GPU, or 1)",
    )
    hosts: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9_.-]+:[0-9]+(,[A-Za-z0-9_.-]+:[0-9]+)*$",
        description="horovodrun: -H host:slots,... (default localhost:nproc_per_node); other hosts are "
        "reached over ssh by horovodrun and must hold the same image or checkout",
    )


LaunchConfig = Annotated[
    InlineLaunch | RunCpuLaunch | TorchrunLaunch | HorovodrunLaunch, Field(discriminator="launcher")
]
"""The launch settings of a run: the variant of its launcher."""

LAUNCHERS: dict[str, type[LaunchBase]] = {
    "inline": InlineLaunch,
    "run_cpu": RunCpuLaunch,
    "torchrun": TorchrunLaunch,
    "horovodrun": HorovodrunLaunch,
}
"""Launcher name -> its variant."""

DEFAULT_LAUNCHER = "inline"


def launch_keys() -> dict[str, list[str]]:
    """Every launch setting -> the launchers it applies to (in :data:`LAUNCHERS` order)."""
    out: dict[str, list[str]] = {}
    for name, variant in LAUNCHERS.items():
        for key in variant.model_fields:
            out.setdefault(key, []).append(name)
    return out


def default_launcher(value: object) -> object:
    """A launch mapping without ``launcher`` is an inline launch (as before the variants)."""
    if isinstance(value, dict) and "launcher" not in value:
        return {"launcher": DEFAULT_LAUNCHER, **value}
    return value


class RunConfig(BaseModel):
    """A fully resolved run: spec + profile + overrides, validated."""

    model_config = ConfigDict(extra="forbid")

    workload: str
    profile: str
    image: str
    requires_gpu: bool = False
    windows: WindowsConfig
    params: dict[str, Any]
    launch: LaunchConfig
    overrides: list[str]

    @field_validator("launch", mode="before")
    @classmethod
    def _launch_default(cls, value: object) -> object:
        return default_launcher(value)

    def job(self) -> dict[str, Any]:
        """The job file the rank process reads (``workloads.rank``)."""
        job: dict[str, Any] = {
            "workload": self.workload,
            "params": self.params,
            "windows": self.windows.model_dump(exclude={"sampler_interval_s"}),
            "sampler_interval_s": self.windows.sampler_interval_s,
        }
        if self.launch.memory_limit_mb is not None:
            job["memory_limit_bytes"] = self.launch.memory_limit_mb * 2**20
        return job

    def flat_params(self) -> dict[str, str]:
        """Every setting as ``section.key -> str`` (for MLflow params)."""
        out: dict[str, str] = {"profile": self.profile}
        for section, values in (
            ("params", self.params),
            ("windows", self.windows.model_dump()),
            ("launch", self.launch.model_dump()),
        ):
            for k, v in values.items():
                out[f"{section}.{k}"] = str(v)
        return out
