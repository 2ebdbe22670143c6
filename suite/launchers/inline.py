"""``inline``: one rank, ``python -m workloads.rank``, optionally bound by numactl (the default launcher)."""

from __future__ import annotations

from typing import Literal

from suite.launchers.bound import BoundLaunch


class InlineLaunch(BoundLaunch):
    """One rank, ``python -m workloads.rank``, optionally under numactl (``cpus``, ``numa_nodes``)."""

    launcher: Literal["inline"] = "inline"
