"""A registered workload: its name, its parameter model and its factory.

In a module of its own, so the workload packages (which define an entry) and the
registry (which collects them) do not import each other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from harness.workload import Workload


@dataclass(frozen=True)
class WorkloadEntry:
    """A registered workload.

    Attributes:
        name: registry key, e.g. ``"resnet50-cpu"``.
        params_model: pydantic model that validates the workload's parameters.
        factory: builds the workload from validated parameters (imports heavy
            libraries lazily, so listing workloads stays fast).
        cpu_precision: the workload trains on the CPU and its ``precision`` param accepts
            ``auto``; the rank decides it on its host (:mod:`workloads.cpu_precision`) and
            records the decision, and the run header shows the planned one.
    """

    name: str
    params_model: type[BaseModel]
    factory: Callable[[Any], Workload]
    cpu_precision: bool = False
