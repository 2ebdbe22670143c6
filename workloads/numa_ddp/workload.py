"""The NUMA DDP rank: the ResNet-50 CPU step under DistributedDataParallel (gloo)."""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from workloads.numa_ddp.params import NumaDDPParams
from workloads.resnet50_cpu.workload import ResNet50CPU


class NumaDDP(ResNet50CPU):
    """One rank of data-parallel ResNet-50 training on CPU.

    Expects torchrun's environment (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT). The
    model is wrapped in DistributedDataParallel, which broadcasts rank 0's weights
    at construction and all-reduces gradients in the backward pass. Each rank uses
    as many threads as CPUs it is bound to, and its own data seed.

    ``synchronize`` is a barrier, so all ranks open and close each window together;
    ``agree_done`` all-reduces the "window done" flag (MIN), so every rank ends a
    window at the same step.

    Raises (from ``__init__``):
        RuntimeError: the process group cannot be formed within collective_timeout_s.
    """

    def __init__(self, params: NumaDDPParams) -> None:
        if not dist.is_initialized():
            dist.init_process_group(params.backend, timeout=timedelta(seconds=params.collective_timeout_s))
        self.rank = dist.get_rank()
        self.world_size = dist.get_world_size()
        threads = params.intra_op_threads or len(os.sched_getaffinity(0))
        super().__init__(params.model_copy(update={"intra_op_threads": threads, "seed": params.seed + self.rank}))
        self.init_seed = params.seed  # every rank's loss trajectory starts from rank 0's initial weights
        self.ddp = DistributedDataParallel(self.model)
        self.forward: Any = torch.compile(self.ddp, backend="inductor") if params.compile == "inductor" else self.ddp
        self._flag = torch.zeros(1, dtype=torch.int32)

    def describe(self) -> dict[str, Any]:
        """The ResNet-50 description plus rank, world size and both batch sizes."""
        info = super().describe()
        info.update(
            rank=self.rank,
            world_size=self.world_size,
            per_rank_batch_size=self.params.batch_size,
            global_batch_size=self.params.batch_size * self.world_size,
            threads=torch.get_num_threads(),
            backend=dist.get_backend(),
        )
        return info

    def synchronize(self) -> None:
        """Barrier across ranks (CPU work itself is synchronous)."""
        dist.barrier()

    def agree_done(self, local_done: bool) -> bool:
        """True when every rank has met both minimums of the current window."""
        self._flag.fill_(1 if local_done else 0)
        dist.all_reduce(self._flag, op=dist.ReduceOp.MIN)
        return bool(self._flag.item())

    def all_gather(self, obj: dict[str, Any]) -> list[dict[str, Any]]:
        """Every rank's ``obj``, in rank order (``torch.distributed.all_gather_object`` over gloo)."""
        gathered: list[Any] = [None] * self.world_size
        dist.all_gather_object(gathered, obj)
        return gathered

    def shutdown(self) -> None:
        """Leave the job: destroy the process group."""
        if dist.is_initialized():
            dist.destroy_process_group()
