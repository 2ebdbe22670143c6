"""The Python interpreter a process runs on: its version and how it was built.

How CPython was built changes the speed of the Python part of every step. An interpreter that
links ``libpython`` as a shared library (pyenv's and many source builds' default) cannot inline
calls inside the interpreter and, built without ``--enable-optimizations``, has no PGO either:
a pure-Python loop ran 29% slower on pyenv's 3.11.7 than on Debian's static 3.11.2 (2-vCPU Xeon,
2026-11-26). ResNet-50 (batch 16, bf16 + channels_last) in the image, against the host: docker/local
1.021 with pyenv's interpreter on the host, 1.014 with Debian's (``trainbench bench docker``, 4 x 20
pairs each). Results record the build so that two systems that differ only there can be told apart.
"""

from __future__ import annotations

import contextlib
import platform
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
