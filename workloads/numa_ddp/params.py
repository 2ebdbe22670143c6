"""Parameters of the NUMA DDP workload: the ResNet-50 CPU knobs plus the process group's."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from workloads.resnet50_cpu.params import ResNet50CPUParams


class NumaDDPParams(ResNet50CPUParams):
    """ResNet-50 CPU parameters, per rank, plus distributed settings.

    Attributes:
        batch_size: the per-rank batch size; the global batch size is batch_size x world size.
        intra_op_threads: 0 = as many threads as CPUs the rank is bound to (its node's cores).
        backend: torch.distributed backend (gloo: the CPU backend).
        collective_timeout_s: seconds a collective waits for a missing rank before it fails.
    """

    backend: Literal["gloo"] = "gloo"
    collective_timeout_s: float = Field(300.0, gt=0, allow_inf_nan=False)
