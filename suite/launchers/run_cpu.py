"""``run_cpu``: one rank under ``torch.backends.xeon.run_cpu`` (its core binding and thread settings).

run_cpu is started with ``--use-default-allocator --disable-iomp`` because it only finds
unversioned ``lib*.so`` files (Debian ships ``.so.2``/``.so.4``) and Intel OpenMP is not
shipped here; trainbench preloads the allocator itself for every launcher, so this launcher
differs from ``inline`` only in run_cpu's core binding and thread settings. ``--no-python``:
run_cpu only accepts a ``*.py`` program otherwise; it then execs the interpreter given.
"""

from __future__ import annotations

from typing import Literal

from suite.launchers.bound import BoundLaunch


class RunCpuLaunch(BoundLaunch):
    """One rank under ``torch.backends.xeon.run_cpu`` (its core binding and thread settings)."""

    launcher: Literal["run_cpu"] = "run_cpu"

    def rank_head(self, python: str) -> list[str]:
        """``python -m torch.backends.xeon.run_cpu ... --no-python python``: run_cpu execs the interpreter."""
        return [
            python,
            "-m",
            "torch.backends.xeon.run_cpu",
            "--use-default-allocator",
            "--disable-iomp",
            "--no-python",
            python,
        ]
