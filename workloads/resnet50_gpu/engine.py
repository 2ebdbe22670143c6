"""Joining the data-parallel job: Horovod (``hvd.init``) or torch.distributed (torchrun's
environment), and the control channel the harness's window agreement uses."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from workloads.resnet50_gpu.params import ResNet50GPUParams


class EngineError(RuntimeError):
    """The requested engine cannot start here (Horovod missing, no GPU for the rank, no launcher env)."""


def local_rank() -> int:
    """This rank's index on its host, from the launcher's environment (0 when not distributed)."""
    for key in ("LOCAL_RANK", "HOROVOD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"):
        if key in os.environ:
            return int(os.environ[key])
    return 0


def local_size() -> int:
    """Ranks on this host, from the launcher's environment (1 when not distributed)."""
    for key in ("LOCAL_WORLD_SIZE", "HOROVOD_LOCAL_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"):
        if key in os.environ:
            return int(os.environ[key])
    return 1


def _import_horovod() -> Any:
    try:
        import horovod.torch as hvd
    except ImportError as exc:
        raise EngineError(
            f"engine=horovod needs Horovod built for PyTorch ({exc}); run it in the trainbench-gpu image "
            "(--runtime docker, or `make run WORKLOAD=resnet50-gpu-horovod RUNTIME=docker`), or use --set engine=ddp"
        ) from exc
    return hvd


@dataclass(frozen=True)
class Joined:
    """This rank's place in the job.

    Attributes:
        hvd: the ``horovod.torch`` module (engine=horovod), else None.
        control: the torch.distributed group for control traffic (engine=ddp), else None.
        backend: the gradient allreduce's backend (``nccl`` or ``gloo``).
        rank: global rank; world_size: ranks in the job.
    """

    hvd: Any
    control: Any
    backend: str
    rank: int
    world_size: int


def join_engine(params: ResNet50GPUParams, device: torch.device, want_cuda: bool) -> Joined:
    """Join the job of ``params.engine`` on ``device``.

    Raises:
        EngineError: Horovod is missing (engine=horovod), or there is no torchrun environment (engine=ddp).
    """
    if params.engine == "horovod":
        hvd = _import_horovod()
        hvd.init()
        # the gradient allreduce: NCCL for GPU tensors when built with it, else Gloo
        backend = "nccl" if want_cuda and hvd.nccl_built() else "gloo"
        return Joined(hvd, None, backend, int(hvd.rank()), int(hvd.size()))
    backend = params.backend if params.backend != "auto" else ("nccl" if want_cuda else "gloo")
    timeout = timedelta(seconds=params.collective_timeout_s)
    if not dist.is_initialized():
        if "MASTER_ADDR" not in os.environ:
            raise EngineError("engine=ddp needs torchrun's environment (launch.launcher=torchrun)")
        kwargs: dict[str, Any] = {"device_id": device} if want_cuda else {}
        dist.init_process_group(backend, timeout=timeout, **kwargs)
    control = dist.new_group(backend="gloo", timeout=timeout) if backend != "gloo" else dist.group.WORLD
    return Joined(None, control, str(dist.get_backend()), dist.get_rank(), dist.get_world_size())
