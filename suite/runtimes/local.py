"""``--runtime local``: the ranks run on this host, beside trainbench (the default runtime).

The launcher's local plan starts the ranks (:mod:`suite.launchers`), and the supervisor
follows them (:mod:`suite.runtimes.supervise`). A torchrun run whose ranks were placed one per
NUMA node is followed by one process on all of their CPUs with the same global batch (the
single-process comparison), from which the result gets its scaling efficiency.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness.gpus import gpu_devices
from harness.system import parse_cpulist
from suite.config import RunConfig
from suite.errors import PreflightError
from suite.launchers import InlineLaunch, LaunchBase, RankStart, plan_launch, rank_args
from suite.runtimes.base import Comparison, Ran, RunContext
from suite.runtimes.supervise import launch_rank
from workloads.job import PlacementSlot

if TYPE_CHECKING:
    from suite.results import Result

DDP_ONLY_PARAMS = ("backend", "collective_timeout_s")
"""Workload params of a data-parallel rank that the single-process comparison does not have."""


def visible_gpus(config: RunConfig) -> int:
    """GPUs NVML lists here for a workload that trains on them (0 for a CPU workload).

    Raises:
        PreflightError: the workload needs a GPU and none is visible (the message says what to do).
    """
    if not config.requires_gpu:
        return 0
    gpus = gpu_devices()
    if not gpus["devices"]:
        raise PreflightError(
            f"workload {config.workload} needs an NVIDIA GPU, but none is visible "
            f"({gpus.get('note', 'NVML lists no device')}); run it on a GPU host, or choose a CPU workload"
        )
    return len(gpus["devices"])


def single_process_config(config: RunConfig, placement: list[PlacementSlot]) -> RunConfig:
    """The comparison run: resnet50-cpu, one process bound to all the ranks' CPUs, global batch, one thread per CPU."""
    cpus = ",".join(slot.cpus for slot in placement)
    n_cpus = len(parse_cpulist(cpus))
    params = {k: v for k, v in config.params.items() if k not in DDP_ONLY_PARAMS}
    params.update(batch_size=config.params["batch_size"] * len(placement), intra_op_threads=n_cpus)
    common = {k: v for k, v in config.launch.model_dump().items() if k in LaunchBase.model_fields}
    launch = InlineLaunch.model_validate({**common, "launcher": "inline", "cpus": cpus})
    return config.model_copy(
        update={
            "workload": "resnet50-cpu",
            "params": params,
            "launch": launch,
            "overrides": [*config.overrides, "(single-process comparison)"],
        }
    )


@dataclass
class LocalRuntime:
    """``--runtime local``: the ranks run on the host, beside trainbench."""

    name: str = "local"

    def job_config(self, config: RunConfig) -> RunConfig:
        """``config`` unchanged: the ranks run as configured."""
        return config

    def preflight(self, config: RunConfig, output_dir: Path) -> None:
        """The launch plan can be made here (allocator, binding), a GPU is visible for a GPU workload,
        and the launcher's own tools are installed (Horovod, numactl).

        Raises:
            suite.launchers.LaunchError: the allocator, a CPU/NUMA binding or a launcher's tool is missing.
            PreflightError: no GPU for a GPU workload.
        """
        gpus = visible_gpus(config)
        plan_launch(config.launch, Path("job.json"), Path("out.json"), gpus=gpus)
        self.check_launcher(config, gpus)

    def check_launcher(self, config: RunConfig, gpus: int) -> None:
        """The launcher's tools on this host (a container brings its own: :class:`DockerRuntime` skips this)."""
        config.launch.check_local(RankStart("python", rank_args(Path("job.json"), Path("out.json")), gpus))

    def run(self, config: RunConfig, run_dir: Path, ctx: RunContext) -> Ran:
        """Start the ranks here and follow them to their end (:func:`suite.runtimes.supervise.launch_rank`)."""
        return launch_rank(config, run_dir, ctx, gpus=visible_gpus(config))

    def annotate(self, result: Result, ran: Ran, run_dir: Path, system: str | None) -> Result:
        """``result`` unchanged."""
        return result

    def comparison(self, config: RunConfig, ran: Ran) -> Comparison | str | None:
        """One process on the ranks' CPUs at the same global batch, after a torchrun run placed one rank
        per NUMA node with ``compare_single``; a note instead across hosts."""
        if not (ran.plan.placement and config.launch.compares_single()):
            return None
        if config.launch.host_count() > 1:
            return "no single-process comparison across hosts"
        single = single_process_config(config, ran.plan.placement)
        return Comparison(single, self, "single-process", "the single-process comparison")
