"""Memory allocators of the rank: jemalloc or tcmalloc preloaded from the Debian packages
(libjemalloc2, libgoogle-perftools4) with jemalloc's MALLOC_CONF, or glibc's own malloc with its
thresholds pinned (:data:`GLIBC_MALLOC_TUNABLES`)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from suite.launchers.base import LaunchError

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

GLIBC_MALLOC_TUNABLES = (
    "glibc.malloc.trim_threshold=2147483647:glibc.malloc.mmap_threshold=33554432:glibc.malloc.top_pad=268435456"
)
"""The ``GLIBC_TUNABLES`` a rank gets with ``allocator=default`` (glibc's malloc), unless the
caller's environment sets ``GLIBC_TUNABLES`` itself (then the caller's value is kept).

glibc's malloc gives freed memory at the top of its heap back to the kernel once more than
``trim_threshold`` is free there, and moves that threshold and the mmap threshold as the
program runs (the "dynamic mmap threshold" of malloc(3)). A training step frees and allocates
its activations again every step, so how much of them is faulted in afresh each step depends
on where the heap's top happens to lie: on the process's luck, not on the machine. Measured
here (2-vCPU Zen 4, glibc 2.36, ResNet-50 batch 16 bf16 + channels_last): 20,000-120,000
minor page faults per step and 0.04-0.24 s of system time in a 1.2-1.6 s step, different in
each process; the same image and torch ran 8% faster in a container than on the host in one
pair of processes and 0.3-3.9% in four others (``make bench``'s docker part). Pinned, the
same steps take 0 faults and 0.00 s of system time, and ``make bench`` measured docker/local
1.0024 (95% CI 0.9935-1.0091).

- ``trim_threshold`` 2 GiB - 1, the largest value mallopt(3) takes (an ``int``), so a running
  process can pin the same thresholds (:func:`pin_glibc_malloc`): up to that much free memory
  at the top of the heap is not given back (RSS stays near the high-water mark, as with
  jemalloc's ``dirty_decay_ms:-1`` in :data:`JEMALLOC_CONF`);
- ``mmap_threshold`` 32 MiB, the largest glibc accepts on 64-bit (``HEAP_MAX_SIZE / 2``):
  smaller blocks come from the heap; larger ones are still mapped and unmapped each time;
- ``top_pad`` 256 MiB: the heap grows in large steps.

Setting any of them turns glibc's dynamic thresholds off (mallopt(3)); setting the trim
threshold alone leaves the mmap threshold at 128 KiB and made every activation a fresh
mapping here (550,000 faults per step). ``/lib64/ld-linux-x86-64.so.2 --list-tunables`` shows
what glibc accepted.
"""

MALLOPT_PARAMS = {"trim_threshold": -1, "top_pad": -2, "mmap_threshold": -3}
"""glibc tunable -> mallopt(3) parameter (M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD in malloc.h)."""


def pin_glibc_malloc(tunables: str = GLIBC_MALLOC_TUNABLES) -> dict[str, int]:
    """Set ``tunables``' malloc thresholds in this running process with mallopt(3), as
    ``GLIBC_TUNABLES`` sets them at a rank's start-up (for a process that is already running,
    such as ``make bench``'s overhead part).

    Args:
        tunables: ``glibc.malloc.NAME=BYTES`` entries joined by ``:``; NAME one of
            :data:`MALLOPT_PARAMS`.

    Returns:
        NAME -> bytes, for what was set.

    Raises:
        ValueError: an entry that is not one of those settings, a value that is not an
            ``int``, or a C library without ``mallopt`` (not glibc) or that refused a value.
    """
    import ctypes
    import ctypes.util

    wanted: dict[str, int] = {}
    for entry in filter(None, tunables.split(":")):
        key, _, text = entry.partition("=")
        name = key.removeprefix("glibc.malloc.")
        if name not in MALLOPT_PARAMS or not text.isdigit() or int(text) > 2**31 - 1:
            raise ValueError(f"{entry!r} is not a glibc.malloc threshold mallopt(3) can set")
        wanted[name] = int(text)
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is None:
        raise ValueError("this C library has no mallopt(3) (not glibc)")
    for name, value in wanted.items():
        if mallopt(MALLOPT_PARAMS[name], value) != 1:
            raise ValueError(f"mallopt(3) refused {name}={value}")
    return wanted


LIB_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/lib",
)


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
