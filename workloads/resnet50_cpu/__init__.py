"""ResNet-50 training on CPU, with the CPU optimization ladder of the seed study.

Seed: C. Rand, "Training AI Models on CPU", Sep 2024 (shared/seeds/003_*.txt):
torchvision ResNet-50, SGD, cross-entropy, synthetic 3x224x224 data, batch 128.
"""

from __future__ import annotations

from typing import Any

from harness.workload import Workload
from workloads.entry import WorkloadEntry
from workloads.resnet50_cpu.params import ResNet50CPUParams


def _build(params: Any) -> Workload:
    from workloads.resnet50_cpu.workload import ResNet50CPU

    return ResNet50CPU(params)


ENTRY = WorkloadEntry(name="resnet50-cpu", params_model=ResNet50CPUParams, factory=_build, cpu_precision=True)
