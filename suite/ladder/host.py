"""What a machine offers a ladder's rungs, and the shape of a ladder (its rungs, labels and settings).

Both ladders (:mod:`suite.ladder.cpu_rungs`, :mod:`suite.ladder.gpu_rungs`) are built from these
types; :mod:`suite.ladder.rungs` picks a workload's ladder and plans it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from harness.isa import IsaInfo
from suite.launchers.allocators import allocator_library
from suite.launchers.base import LaunchError


@dataclass(frozen=True)
class Gpu:
    """One visible NVIDIA GPU: its name and compute capability (``"9.0"``; None when NVML does not say)."""

    name: str
    compute_capability: str | None = None


@dataclass(frozen=True)
class Host:
    """What this machine offers the rungs (injectable, so every skip is testable anywhere).

    Attributes:
        isa: the effective ISA (:func:`harness.system.read_isa`).
        cxx: the C++ compiler found, or None (inductor's CPU kernels).
        allocator: ``jemalloc`` or ``tcmalloc`` when its library is installed, else None.
        cpus: CPUs this process may use.
        gpus: the NVIDIA GPUs NVML lists (:func:`harness.gpus.gpu_devices`), none without a driver.
        cc: the C compiler found, or None (Triton builds its GPU kernels' launchers with it).
    """

    isa: IsaInfo
    cxx: str | None
    allocator: str | None
    cpus: int
    gpus: tuple[Gpu, ...] = ()
    cc: str | None = None


def _find(candidates: list[str | None]) -> str | None:
    for name in candidates:
        if name and shutil.which(name):
            return name
    return None


def find_cxx(environ: Mapping[str, str] | None = None) -> str | None:
    """The C++ compiler inductor would use: ``$CXX`` when it exists, else g++, c++ or clang++ on the PATH."""
    env = os.environ if environ is None else environ
    return _find([env.get("CXX"), "g++", "c++", "clang++"])


def find_cc(environ: Mapping[str, str] | None = None) -> str | None:
    """The C compiler Triton would use: ``$CC`` when it exists, else cc, gcc or clang on the PATH."""
    env = os.environ if environ is None else environ
    return _find([env.get("CC"), "cc", "gcc", "clang"])


def find_allocator() -> str | None:
    """``jemalloc`` when libjemalloc.so.2 is installed, else ``tcmalloc`` when libtcmalloc.so.4 is, else None."""
    for name in ("jemalloc", "tcmalloc"):
        try:
            allocator_library(name)
        except LaunchError:
            continue
        return name
    return None


def this_host() -> Host:
    """This machine's :class:`Host` (the GPUs from NVML: no CUDA context is created)."""
    from harness.gpus import gpu_devices
    from harness.system import read_isa

    try:
        devices = gpu_devices().get("devices", [])
    except Exception:  # NVML started but a device cannot be read: no GPU rung can be planned on it
        devices = []
    gpus = tuple(Gpu(str(d.get("name", "?")), d.get("compute_capability")) for d in devices)
    return Host(read_isa(), find_cxx(), find_allocator(), len(os.sched_getaffinity(0)), gpus, find_cc())


@dataclass(frozen=True)
class Context:
    """What a rung's settings may depend on.

    Attributes:
        host: the machine.
        device: ``cpu`` or ``cuda``: where the workload trains (its resolved ``device`` param).
        ran: what the rungs below that run have set, ``key -> "key=value"``.
    """

    host: Host
    device: str
    ran: Mapping[str, str] = field(default_factory=dict)


Adds = Callable[[Context], tuple[list[str], str | None]]
"""A rung's settings here (``key=value`` overrides), or why it is skipped (then no settings)."""


@dataclass(frozen=True)
class Ladder:
    """One optimization ladder.

    Attributes:
        title: its name in the table and the plot.
        rungs: every rung, bottom to top; the first is the baseline every ratio is taken against.
        labels: each rung's name in the table and the plot.
        managed: settings the ladder sets itself (``--set`` may not set them).
        adds: each rung's settings, given the context (except ``batch``, the batch-size search).
        batch_sizes: the batch-size search's candidates from (the base batch size, the device), or
            None when the ladder has no search.
        min_trajectory_samples: the fewest distinct samples a loss trajectory may train on: with fewer,
            honest rungs of this ladder's workloads deviated beyond the tolerance (:mod:`suite.ladder.numerics`).
    """

    title: str
    rungs: tuple[str, ...]
    labels: Mapping[str, str]
    managed: tuple[str, ...]
    adds: Mapping[str, Adds]
    batch_sizes: Callable[[int, str], list[int]] | None = None
    min_trajectory_samples: int = 8
