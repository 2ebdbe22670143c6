"""HOW the ranks start: one module per launcher, each with its config variant, its local plan and its Slurm plan.

============  ====================================================================
launcher      its own settings
============  ====================================================================
inline        ``cpus``, ``numa_nodes`` (numactl binding of the one rank)
run_cpu       ``cpus``, ``numa_nodes`` (as inline, under torch.backends.xeon.run_cpu)
torchrun      ``topology``, ``nnodes``, ``nproc_per_node``, ``rdzv_endpoint``,
              ``rdzv_id``, ``compare_single``
horovodrun    ``nproc_per_node``, ``hosts``
============  ====================================================================

Every launcher also has the settings of :class:`suite.launchers.base.LaunchBase` (allocator,
OpenMP, memory limit, hang timeouts). Launch settings are one typed variant per launcher, as
optimum-benchmark's launcher configs are, so a setting that does not apply (``topology`` for
``inline``) cannot be set at all. Adding a launcher is one module (its variant with its plans)
and its entry in :data:`LaunchConfig` and :data:`LAUNCHERS` here. Where the ranks run (this
host, a container, a Slurm job) is the runtime's (``suite.runtimes``): every launcher runs in
every runtime.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

from pydantic import Field

from suite.launchers.allocators import GLIBC_MALLOC_TUNABLES, JEMALLOC_CONF, LIB_DIRS, allocator_library
from suite.launchers.base import LaunchBase, LaunchError, LaunchPlan, RankStart, openmp_env
from suite.launchers.horovodrun import HorovodrunLaunch
from suite.launchers.inline import InlineLaunch
from suite.launchers.run_cpu import RunCpuLaunch
from suite.launchers.torchrun import TorchrunLaunch

__all__ = [
    "DEFAULT_LAUNCHER",
    "LAUNCHERS",
    "HorovodrunLaunch",
    "InlineLaunch",
    "LaunchBase",
    "LaunchConfig",
    "LaunchError",
    "LaunchPlan",
    "RankStart",
    "RunCpuLaunch",
    "TorchrunLaunch",
    "default_launcher",
    "launch_keys",
    "plan_launch",
    "rank_args",
    "rank_env",
]

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


def rank_args(job: Path, out: Path, progress: Path | None = None) -> list[str]:
    """The rank's arguments after the interpreter: ``-m workloads.rank --job JOB --out OUT [--progress P]``."""
    args = ["-m", "workloads.rank", "--job", str(job), "--out", str(out)]
    return [*args, "--progress", str(progress)] if progress is not None else args


def rank_env(
    launch: LaunchBase, base_env: Mapping[str, str] | None = None, search_dirs: tuple[str, ...] = LIB_DIRS
) -> dict[str, str]:
    """The variables a rank started on this host gets on top of the caller's environment.

    The allocator is preloaded (``LD_PRELOAD``, with jemalloc's ``MALLOC_CONF``); with
    ``allocator=default`` the rank gets glibc's malloc with its thresholds pinned
    (``GLIBC_TUNABLES``: :data:`suite.launchers.allocators.GLIBC_MALLOC_TUNABLES`) or, when the
    caller's environment sets ``GLIBC_TUNABLES`` (``GLIBC_TUNABLES=`` for glibc's own dynamic
    thresholds), the caller's value; either way it is set explicitly, so a container gets it too
    and the result records it. Then the OpenMP settings given.

    Raises:
        LaunchError: the allocator's library is missing, or ``malloc_conf`` without jemalloc.
    """
    base = dict(os.environ if base_env is None else base_env)
    env: dict[str, str] = {}
    lib = allocator_library(launch.allocator, search_dirs)
    if lib is not None:
        existing = base.get("LD_PRELOAD", "")
        env["LD_PRELOAD"] = ":".join(p for p in (str(lib), existing) if p)
        if launch.allocator == "jemalloc":
            env["MALLOC_CONF"] = launch.malloc_conf or base.get("MALLOC_CONF") or JEMALLOC_CONF
    elif launch.malloc_conf:
        raise LaunchError("malloc_conf applies to allocator=jemalloc only; set allocator=jemalloc or drop malloc_conf")
    else:  # glibc's malloc: pinned thresholds; the caller's own GLIBC_TUNABLES (even "") wins
        env["GLIBC_TUNABLES"] = base.get("GLIBC_TUNABLES", GLIBC_MALLOC_TUNABLES)
    return {**env, **openmp_env(launch)}


def plan_launch(
    launch: LaunchBase,
    job: Path,
    out: Path,
    progress: Path | None = None,
    python: str = sys.executable,
    search_dirs: tuple[str, ...] = LIB_DIRS,
    base_env: Mapping[str, str] | None = None,
    gpus: int = 0,
) -> LaunchPlan:
    """The command that starts ``launch``'s ranks on this host, and the environment it runs with.

    Args:
        gpus: GPUs visible to a workload that trains on them (0 for a CPU workload).

    Raises:
        LaunchError: a requested allocator is missing, or a CPU/NUMA binding or layout cannot be made.
    """
    env = rank_env(launch, base_env, search_dirs)
    return launch.local_plan(RankStart(python, rank_args(job, out, progress), gpus), env)
