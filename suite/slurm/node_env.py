"""The node side of a rank's memory allocator under Slurm: the preload is found where the rank runs.

A local run preloads the allocator library that trainbench finds on its own host
(:func:`suite.launchers.allocators.allocator_library`). Under Slurm the rank runs on another
machine, or in a Pyxis container, whose library path may differ (or which may lack
the library), so the batch script starts the rank's process through::

    python -m suite.slurm.node_env --allocator jemalloc -- CMD ...

which looks the library up on the node (inside the container when there is one),
prepends it to ``LD_PRELOAD`` and execs CMD. A node without the library fails the job
at once with the package to install. ``MALLOC_CONF`` is set by the script itself (it
names no path).
"""

from __future__ import annotations

import argparse
import os
import socket
import sys

from suite.launchers.allocators import ALLOCATORS, allocator_library
from suite.launchers.base import LaunchError

EXIT_MISSING = 2
"""Exit status when the allocator is not installed on the node (or the arguments are wrong)."""


def preload_env(allocator: str, environ: dict[str, str]) -> dict[str, str]:
    """``environ`` with the node's library of ``allocator`` first in ``LD_PRELOAD`` (unchanged for ``default``).

    Raises:
        suite.run.options.LaunchError: the library is not installed on this node.
    """
    lib = allocator_library(allocator)
    if lib is None:
        return dict(environ)
    existing = environ.get("LD_PRELOAD", "")
    return {**environ, "LD_PRELOAD": ":".join(p for p in (str(lib), existing) if p)}


def main(argv: list[str] | None = None) -> int:
    """Exec the command after ``--`` with the allocator preloaded; exit 2 when that cannot be done."""
    ap = argparse.ArgumentParser(prog="python -m suite.slurm.node_env")
    ap.add_argument("--allocator", required=True, choices=["default", *ALLOCATORS])
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        print("node_env: give the command to run after --", file=sys.stderr)
        return EXIT_MISSING
    try:
        env = preload_env(args.allocator, dict(os.environ))
    except LaunchError as exc:
        print(f"trainbench: node {socket.gethostname()}: {exc}", file=sys.stderr, flush=True)
        return EXIT_MISSING
    os.execvpe(command[0], command, env)


if __name__ == "__main__":
    sys.exit(main())
