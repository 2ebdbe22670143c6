"""ResNet-50 data-parallel training with one DistributedDataParallel rank per NUMA node (gloo, CPU).

Seed: C. Rand, "Training AI Models on CPU", Sep 2024 (DDP across the 2 NUMA nodes of a
c6i.32xlarge did not raise throughput); Intel's MLPerf Training v3.0 CPU runs used one
rank per socket with tcmalloc and tuned OpenMP (shared/CONTEXT.md).
"""

from __future__ import annotations

from typing import Any

from harness.workload import Workload
from workloads.entry import WorkloadEntry
from workloads.numa_ddp.params import NumaDDPParams


def _build(params: Any) -> Workload:
    from workloads.numa_ddp.workload import NumaDDP

    return NumaDDP(params)


ENTRY = WorkloadEntry(name="numa-ddp", params_model=NumaDDPParams, factory=_build, cpu_precision=True)
