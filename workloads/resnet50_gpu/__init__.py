"""ResNet-50 data-parallel training on GPUs with Horovod (NCCL), or native DDP for comparison.

Seeds: Horovod's ``pytorch_synthetic_benchmark.py`` recipe (DistributedOptimizer,
parameter and optimizer-state broadcast, one process per GPU); the anchors in
shared/CONTEXT.md (Lambda's PyTorch AMP H100 2,790 / H200 3,079 images/s; NVIDIA's
A100 2,470; MLPerf Training v4.0 MXNet + DALI about 7,160 per H100).
"""

from __future__ import annotations

from typing import Any

from harness.workload import Workload
from workloads.entry import WorkloadEntry
from workloads.resnet50_gpu.params import ResNet50GPUParams


def _build(params: Any) -> Workload:
    from workloads.resnet50_gpu.workload import ResNet50GPU

    return ResNet50GPU(params)


ENTRY = WorkloadEntry(name="resnet50-gpu-horovod", params_model=ResNet50GPUParams, factory=_build)
