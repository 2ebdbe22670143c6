"""Starting the rank process: the launcher's command, the memory allocator (a preload, or
glibc's pinned thresholds: :mod:`suite.run.allocators`) and the OpenMP environment.

The rank reads back from /proc/self/maps which allocator really loaded, and that
reading, not this request, goes into the result.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from harness.gpus import gpu_devices
from harness.system import numa_topology, parse_cpulist
from suite.config import HorovodrunLaunch, InlineLaunch, LaunchBase, RunCpuLaunch, TorchrunLaunch
from suite.run.allocators import GLIBC_MALLOC_TUNABLES, JEMALLOC_CONF, LIB_DIRS, allocator_library
from suite.run.options import LaunchError
from suite.run.placement import PlacementError, placement

__all__ = ["LOCAL_HOSTS", "LaunchError", "LaunchPlan", "binding_prefix", "horovod_hosts", "plan_launch"]


@dataclass
class LaunchPlan:
    """A command and the environment changes it runs with.

    Attributes:
        command: argv of the rank process (or of its launcher, or of ``docker run``).
        env_set: variables set on top of the caller's environment.
        launcher: ``inline``, ``run_cpu``, ``torchrun`` or ``horovodrun``.
        runtime: ``local``, or the runtime a wrapper put the command in (``docker``).
        image: container image name, when the runtime is a container.
        image_id: container image id (``sha256:...``), when the runtime is a container.
        placement: torchrun: one slot per local rank (``suite.run.placement``), written into the job.
        processes: ranks the launcher starts (all hosts for horovodrun, this host for torchrun).
    """

    command: list[str]
    env_set: dict[str, str] = field(default_factory=dict)
    launcher: str = "inline"
    runtime: str = "local"
    image: str | None = None
    image_id: str | None = None
    placement: list[dict[str, str]] = field(default_factory=list)
    processes: int = 1

    def environ(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The full environment: ``base`` (default ``os.environ``) plus ``env_set``."""
        env = dict(os.environ if base is None else base)
        env.update(self.env_set)
        return env


def binding_prefix(
    launch: InlineLaunch | RunCpuLaunch, available_cpus: set[int] | None = None, numa_nodes: list[int] | None = None
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


LOCAL_HOSTS = ("localhost", "127.0.0.1")


def horovod_hosts(launch: HorovodrunLaunch, gpu_count: int | None = None) -> tuple[int, str]:
    """``(np, -H value)`` for horovodrun.

    Without ``hosts``: ``nproc_per_node`` ranks (default one per visible GPU, else 1)
    on ``localhost``. With ``hosts``: their slots summed; the first host must be this
    one, because global rank 0 (which writes the result) runs on the first host.

    Raises:
        LaunchError: the first host is another machine, or nproc_per_node exceeds the slots.
    """
    if launch.hosts is None:
        if launch.nproc_per_node is not None:
            n = launch.nproc_per_node
        else:
            n = max(1, len(gpu_devices()["devices"]) if gpu_count is None else gpu_count)
        return n, f"localhost:{n}"
    entries = [h.rsplit(":", 1) for h in launch.hosts.split(",")]
    first = entries[0][0]
    if first not in (*LOCAL_HOSTS, socket.gethostname()):
        raise LaunchError(
            f"hosts={launch.hosts}: the first host must be this machine (localhost or {socket.gethostname()}), "
            "where global rank 0 writes the result"
        )
    total = sum(int(slots) for _, slots in entries)
    if launch.nproc_per_node is not None and launch.nproc_per_node > int(entries[0][1]):
        raise LaunchError(f"nproc_per_node={launch.nproc_per_node} exceeds this host's {entries[0][1]} slots in hosts")
    return total, launch.hosts


def plan_launch(
    launch: LaunchBase,
    job: Path,
    out: Path,
    progress: Path | None = None,
    python: str = sys.executable,
    search_dirs: tuple[str, ...] = LIB_DIRS,
    base_env: Mapping[str, str] | None = None,
) -> LaunchPlan:
    """Build the rank command and its environment.

    ``run_cpu`` is started with ``--use-default-allocator --disable-iomp`` because
    it only finds unversioned ``lib*.so`` files (Debian ships ``.so.2``/``.so.4``)
    and Intel OpenMP is not shipped here; the allocator is preloaded by trainbench
    in both launchers, so the two launchers differ only in run_cpu's core binding
    and thread settings. With ``allocator=default`` the rank gets glibc's malloc with its
    thresholds pinned (``GLIBC_TUNABLES``: :data:`suite.run.allocators.GLIBC_MALLOC_TUNABLES`)
    or, when the caller's environment sets ``GLIBC_TUNABLES`` (``GLIBC_TUNABLES=`` for glibc's
    own dynamic thresholds), the caller's value; either way it is in ``env_set``, so a
    container or a Slurm job gets it too and the result records it.

    Raises:
        LaunchError: a requested allocator is missing, or a CPU/NUMA binding cannot be made.
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
    for key, value in (
        ("OMP_NUM_THREADS", launch.omp_num_threads),
        ("KMP_BLOCKTIME", launch.kmp_blocktime),
        ("KMP_AFFINITY", launch.kmp_affinity),
        ("OMP_PROC_BIND", launch.omp_proc_bind),
        ("OMP_PLACES", launch.omp_places),
    ):
        if value is not None:
            env[key] = str(value)
    rank_args = ["-m", "workloads.rank", "--job", str(job), "--out", str(out)]
    if progress is not None:
        rank_args += ["--progress", str(progress)]
    if isinstance(launch, HorovodrunLaunch):
        np_, hosts = horovod_hosts(launch)
        cmd = [python, "-m", "horovod.runner.launch", "--gloo", "-np", str(np_), "-H", hosts, python]
        return LaunchPlan(command=[*cmd, *rank_args], env_set=env, launcher="horovodrun", processes=np_)
    if isinstance(launch, TorchrunLaunch):
        return _torchrun_plan(launch, python, rank_args, env)
    if isinstance(launch, RunCpuLaunch):
        # --no-python: run_cpu only accepts a *.py program otherwise; it then execs this interpreter.
        cmd = [
            python,
            "-m",
            "torch.backends.xeon.run_cpu",
            "--use-default-allocator",
            "--disable-iomp",
            "--no-python",
            python,
            *rank_args,
        ]
        return LaunchPlan(command=[*binding_prefix(launch), *cmd], env_set=env, launcher="run_cpu")
    if isinstance(launch, InlineLaunch):
        return LaunchPlan(command=[*binding_prefix(launch), python, *rank_args], env_set=env, launcher="inline")
    raise LaunchError(f"launcher {launch.launcher!r} has no launch plan")


def _torchrun_plan(launch: TorchrunLaunch, python: str, rank_args: list[str], env: dict[str, str]) -> LaunchPlan:
    """torchrun: one rank per placement slot (NUMA node), or ``nproc_per_node`` unbound ranks.

    Raises:
        LaunchError: both ``nproc_per_node`` and ``topology``, a topology that cannot be
            placed here, or ``nnodes > 1`` without ``rdzv_endpoint``.
    """
    if launch.nproc_per_node is not None:
        if launch.topology is not None:
            raise LaunchError("set either nproc_per_node (unbound ranks, e.g. one per GPU) or topology, not both")
        slots: list[dict[str, str]] = []
        nproc = launch.nproc_per_node
    else:
        try:
            slots = placement(launch.topology)
        except PlacementError as exc:
            raise LaunchError(str(exc)) from exc
        nproc = len(slots)
    cmd = [python, "-m", "torch.distributed.run", f"--nproc-per-node={nproc}"]
    if launch.nnodes == 1:
        cmd.append("--standalone")
    elif not launch.rdzv_endpoint:
        raise LaunchError(f"nnodes={launch.nnodes} needs rdzv_endpoint=HOST:PORT (the c10d rendezvous)")
    else:
        cmd += [
            f"--nnodes={launch.nnodes}",
            "--rdzv-backend=c10d",
            f"--rdzv-endpoint={launch.rdzv_endpoint}",
            f"--rdzv-id={launch.rdzv_id}",
        ]
    return LaunchPlan(command=[*cmd, *rank_args], env_set=env, launcher="torchrun", placement=slots, processes=nproc)
