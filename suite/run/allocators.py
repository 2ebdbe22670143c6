"""Memory allocators preloaded into the rank: jemalloc or tcmalloc from the Debian packages
(libjemalloc2, libgoogle-perftools4), and jemalloc's MALLOC_CONF."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from suite.run.options import LaunchError

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
