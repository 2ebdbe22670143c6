"""Starting the rank process: launcher, memory allocator preload and OpenMP environment.

The allocator is preloaded from the Debian packages (libjemalloc2,
libgoogle-perftools4). The rank reads back from /proc/self/maps which allocator
really loaded, and that reading, not this request, goes into the result.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from harness.system import gpu_devices, numa_topology, parse_cpulist
from suite.placement import PlacementError, placement
from suite.specs import LaunchConfig

ALLOCATORS: dict[str, tuple[str, str]] = {
    "jemalloc": ("libjemalloc.so.2", "libjemalloc2"),
    "tcmalloc": ("libtcmalloc.so.4", "libgoogle-perftools4"),
}
"""allocator -> (shared library soname, Debian package that ships it)."""

RUN_CPU_JEMALLOC_CONF = (
    "oversize_threshold:1,background_thread:true,metadata_thp:auto,dirty_decay_ms:9000000000,muzzy_decay_ms:9000000000"
)
"""The MALLOC_CONF that ``torch.backends.xeon.run_cpu`` sets with jemalloc (PyTorch 2.x source).

Not the default here: with jemalloc 5.3 (Debian's libjemalloc2) it purges every large
buffer on free. ``oversize_threshold:1`` sends each allocation to jemalloc's dedicated
huge arena, and jemalloc 5.3 sets that arena's dirty and muzzy decay to 0 ("purge
eagerly", ``arena_choose_huge`` in src/arena.c) whenever the default decay is > 0. A
ResNet-50 step at batch 128 then gives back and faults in again its activation buffers:
measured here (2-vCPU Zen 4) at 165,000-215,000 minor page faults/s, 234 ``madvise(
MADV_DONTNEED)`` calls per 10 s, RSS swinging 5.0-6.3 GiB, against 16-360 faults/s with
:data:`JEMALLOC_CONF`.
"""

JEMALLOC_CONF = "oversize_threshold:1,background_thread:true,metadata_thp:auto,dirty_decay_ms:-1,muzzy_decay_ms:-1"
"""trainbench's MALLOC_CONF for ``allocator=jemalloc``: run_cpu's, with decay -1 (never purge).

A negative decay is not "> 0", so the huge arena keeps it too and freed pages stay mapped
for reuse, which is what run_cpu's 9e9 ms decay intends (see :data:`RUN_CPU_JEMALLOC_CONF`).
The cost: RSS stays at the high-water mark. ``malloc_conf=...`` overrides it (a closed-division
tunable).
"""

LIB_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/lib",
)


class LaunchError(RuntimeError):
    """The requested launch environment cannot be set up (e.g. a missing allocator)."""


def find_library(soname: str, search_dirs: tuple[str, ...] = LIB_DIRS) -> Path | None:
    """Absolute path of a shared library, from ``ldconfig -p`` or the usual directories."""
    ldconfig = shutil.which("ldconfig") or ("/sbin/ldconfig" if Path("/sbin/ldconfig").exists() else None)
    if ldconfig:
        try:
            out = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, timeout=10).stdout
            m = re.search(rf"^\s*{re.escape(soname)} \(.*\) => (\S+)$", out, re.M)
            if m and Path(m.group(1)).exists():
                return Path(m.group(1))
        except (OSError, subprocess.SubprocessError):
            pass
    for d in search_dirs:
        p = Path(d) / soname
        if p.exists():
            return p
    return None


def allocator_library(name: str, search_dirs: tuple[str, ...] = LIB_DIRS) -> Path | None:
    """Path to preload for ``name`` (None for ``default``).

    Raises:
        LaunchError: the library is not installed; the message names the package.
    """
    if name == "default":
        return None
    if name not in ALLOCATORS:
        raise LaunchError(f"unknown allocator {name!r}; use default, jemalloc or tcmalloc")
    soname, package = ALLOCATORS[name]
    path = find_library(soname, search_dirs)
    if path is None:
        raise LaunchError(
            f"allocator {name} was requested but {soname} was not found (looked in ldconfig and "
            f"{', '.join(search_dirs)}). Install it (Debian/Ubuntu: apt-get install {package}) "
            f"or run with --set allocator=default"
        )
    return path


@dataclass
class LaunchPlan:
    """A command and the environment changes it runs with.

    Attributes:
        command: argv of the rank process (or of its launcher, or of ``docker run``).
        env_set: variables set on top of the caller's environment.
        launcher: ``inline`` or ``run_cpu``.
        runtime: ``local``, or the runtime a wrapper put the command in (``docker``).
        image: container image name, when the runtime is a container.
        image_id: container image id (``sha256:...``), when the runtime is a container.
        placement: torchrun: one slot per local rank (``suite.placement``), written into the job.
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
    launch: LaunchConfig, available_cpus: set[int] | None = None, numa_nodes: list[int] | None = None
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


def horovod_hosts(launch: LaunchConfig, gpu_count: int | None = None) -> tuple[int, str]:
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
    launch: LaunchConfig,
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
    and thread settings.

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
    prefix = binding_prefix(launch)
    if launch.launcher == "horovodrun":
        if prefix:
            raise LaunchError(
                "with launcher=horovodrun, cpus/numa_nodes do not apply; bind with the container's cpuset"
            )
        np_, hosts = horovod_hosts(launch)
        cmd = [python, "-m", "horovod.runner.launch", "--gloo", "-np", str(np_), "-H", hosts, python]
        return LaunchPlan(command=[*cmd, *rank_args], env_set=env, launcher="horovodrun", processes=np_)
    if launch.launcher == "torchrun":
        if prefix:
            raise LaunchError("with launcher=torchrun, place ranks with topology=..., not cpus/numa_nodes")
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
        return LaunchPlan(
            command=[*cmd, *rank_args], env_set=env, launcher="torchrun", placement=slots, processes=nproc
        )
    if launch.launcher == "run_cpu":
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
    else:
        cmd = [python, *rank_args]
    return LaunchPlan(command=[*prefix, *cmd], env_set=env, launcher=launch.launcher)
