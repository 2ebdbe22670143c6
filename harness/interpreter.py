"""The Python interpreter a process runs on: its version and how it was built.

How CPython was built changes the speed of the Python part of every step. An interpreter that
links ``libpython`` as a shared library (pyenv's and many source builds' default) cannot inline
calls inside the interpreter and, built without ``--enable-optimizations``, has no PGO either:
a pure-Python loop ran 29% slower on pyenv's 3.11.7 than on Debian's static 3.11.2 (2-vCPU Xeon,
2026-11-26). ResNet-50 (batch 16, bf16 + channels_last) in the image, against the host: docker/local
1.021 and, in a later session, 1.017 with pyenv's interpreter on the host, 1.014 with Debian's
(``trainbench bench docker``, 4 x 20 pairs each; in the 1.017 run both sides used 1.97 of 2 cores).
With the image's own files on the local side too (the bench run in a chroot of the exported image:
the same interpreter and libraries) and the image's non-root uid, docker/local was 1.013 and 1.006
(2 x 12 pairs each); the same chroot run as root gave 1.03-1.075, for a reason not yet found (same
Xeon, 2026-11-26; fresh cgroups and PID/mount namespaces for the chroot side did not change it).
Results record the build so that two systems that differ only there can be told apart.
"""

from __future__ import annotations

import contextlib
import platform
import time
from pathlib import Path


def libpython_shared(maps: Path = Path("/proc/self/maps")) -> bool | None:
    """Whether a shared ``libpython*.so`` is mapped into this process (None: ``maps`` cannot be read)."""
    with contextlib.suppress(OSError):
        return any("/libpython" in line for line in maps.read_text().splitlines())
    return None


def python_info() -> dict[str, str | None]:
    """This interpreter as a JSON-ready dict.

    Keys: ``version`` (e.g. ``"3.11.7"``), ``implementation`` (``"CPython"``), and ``build``: the
    compiler, the build date and the libpython linkage, e.g. ``"GCC 12.2.0, Apr 28 2025, libpython
    static"`` (``"libpython unknown"`` where ``/proc/self/maps`` cannot be read).
    """
    shared = libpython_shared()
    linkage = "unknown" if shared is None else "shared" if shared else "static"
    built = " ".join(platform.python_build()[1].split())  # "May  9 2026 07:35:25" has two spaces
    return {
        "version": platform.python_version(),
        "implementation": platform.python_implementation(),
        "build": f"{platform.python_compiler()}, {built}, libpython {linkage}",
    }


class _Node:
    __slots__ = ("child", "weight")

    def __init__(self, weight: int, child: _Node | None) -> None:
        self.weight = weight
        self.child = child


def _walk(node: _Node | None, table: dict[int, int]) -> int:
    total = 0
    while node is not None:
        total += table.get(node.weight & 63, 0) + node.weight
        node = node.child
    return total


def python_loop_s(repeats: int = 5, length: int = 20_000) -> float:
    """The interpreter's pure-Python speed: the best of ``repeats`` wall times, in seconds, of one
    fixed loop over ``length`` objects (attribute reads, dict lookups, integer arithmetic and a
    call per pass: the kind of work ``nn.Module.__call__`` and a per-parameter optimizer step do
    between kernels). About 2 ms per pass at the defaults on a 2-vCPU Xeon. Only ratios between
    interpreters on one machine mean anything (``trainbench bench docker`` prints local and
    image side by side).

    Raises:
        ValueError: ``repeats`` or ``length`` below 1.
    """
    if repeats < 1 or length < 1:
        raise ValueError(f"repeats and length must be >= 1, got {repeats} and {length}")
    node: _Node | None = None
    for i in range(length):
        node = _Node(i, node)
    table = {i: i * i for i in range(64)}
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        _walk(node, table)
        best = min(best, time.perf_counter() - t0)
    return best
