"""One rank of data-parallel ResNet-50 training: Horovod (NCCL/Gloo) or native DDP.

At world size 1 there is nothing to all-reduce, so the model trains unwrapped: no
DistributedDataParallel, no ``hvd.DistributedOptimizer`` (the wrapper cost 2% eager and
6.4% under ``torch.compile`` on one H100, DDP's graph breaks); ``describe()`` says which
wrapper ran (``wrapper``).

Timing method (what the harness measures, and why no step forces a device sync):
``sync_each_step`` is False, so the harness calls :meth:`ResNet50GPU.synchronize`
(``torch.cuda.synchronize`` plus a barrier across ranks) only at the edges of each
window. A window's wall-clock length therefore covers all the device work queued in
it, and throughput (samples / window seconds) is exact. On a GPU each step's device
time comes from CUDA events around it (:meth:`ResNet50GPU.device_timer`), read at the
window edges. A step's ``compute_s`` is the host time of that step: launching its
kernels and waiting where the framework itself waits (Horovod's optimizer ``step``
waits for its allreduce handles; DDP lets the host run ahead until the CUDA queue or
the caching allocator blocks). The loss
is checked for NaN/inf on the device (a flag accumulated without reading it back)
and read at the window edge, so the check adds no synchronization either; fp16's
gradient scaler does read its overflow flag every step, as ``GradScaler.step`` must.
On CPU every operation is synchronous and the loss is checked each step.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import torch
import torch.distributed as dist
import torchvision

from harness.device_timer import CudaEventTimer, DeviceTimer
from harness.workload import Workload
from workloads.checks import NonFiniteLossError, check_loss
from workloads.image_files import DataError
from workloads.resnet50_gpu.engine import EngineError, join_engine, local_rank, local_size
from workloads.resnet50_gpu.params import ResNet50GPUParams
from workloads.resnet50_gpu.pipelines import build_feed
from workloads.trajectory import loss_trajectory

__all__ = ["DataError", "EngineError", "NonFiniteLossError", "ResNet50GPU"]


class ResNet50GPU(Workload):
    """torchvision ResNet-50, SGD and cross-entropy, data-parallel over ``world_size`` ranks.

    Implements :class:`harness.workload.Workload`. A step is zero_grad, forward under
    autocast (bf16/fp16) or fp32, loss, backward with the gradient allreduce, and the
    optimizer step, on ``batch_size`` images of 3 x image_size x image_size per rank.

    Horovod: ``hvd.init()``; rank 0's parameters and optimizer state are broadcast;
    ``hvd.DistributedOptimizer`` averages gradients (NCCL on GPU, Gloo on CPU). DDP:
    the process group comes from torchrun's environment (nccl on GPU, gloo on CPU);
    DistributedDataParallel broadcasts rank 0's weights and all-reduces gradients in
    buckets during backward. Control traffic (window agreement, barriers, gathering
    the ranks' records) goes over a CPU channel (Horovod's Gloo ops; a gloo group for
    DDP) so it never syncs the GPU. At world size 1 neither wrapper is applied and no
    collective runs in the loop (window agreement and barriers are local).

    Raises (from ``__init__``):
        EngineError: Horovod is missing, or the rank has no GPU.
        DataError: data_dir cannot feed a batch per rank.
        WorkloadRefused: the input pipeline cannot run here (DataLoader memory, DALI missing).
        DataServiceError: the tf.data service cannot feed the run.
    """

    sync_each_step = False

    def __init__(self, params: ResNet50GPUParams) -> None:
        self.params = params
        self.local_rank = local_rank()
        want_cuda = params.device == "cuda" or (params.device == "auto" and torch.cuda.is_available())
        if want_cuda:
            count = torch.cuda.device_count()
            if count == 0:
                raise EngineError("device=cuda but no CUDA device is visible; run on a GPU host or set device=cpu")
            if self.local_rank >= count:
                raise EngineError(
                    f"local rank {self.local_rank} has no GPU ({count} visible); start at most one rank per GPU "
                    "(nproc_per_node)"
                )
            torch.cuda.set_device(self.local_rank)
            self.device = torch.device("cuda", self.local_rank)
            torch.backends.cudnn.benchmark = True
        else:
            self.device = torch.device("cpu")
            torch.set_num_threads(max(1, len(os.sched_getaffinity(0)) // local_size()))
        joined = join_engine(params, self.device, want_cuda)
        self.hvd, self._control, self.backend = joined.hvd, joined.control, joined.backend
        self.rank, self.world_size = joined.rank, joined.world_size

        torch.manual_seed(params.seed)
        self.memory_format = torch.channels_last if params.channels_last else torch.contiguous_format
        model = torchvision.models.resnet50(num_classes=params.num_classes)
        # Horovod's in-place collectives (broadcast, gradient allreduce) refuse non-contiguous
        # tensors, so under Horovod the weights stay in the default layout and only the inputs
        # are channels_last: convolutions still run NHWC (a channels_last input selects the NHWC
        # kernels), and autograd keeps each gradient in its weight's (contiguous) layout. At world
        # size 1 nothing is broadcast or all-reduced, so the weights are channels_last there too.
        self.weights_channels_last = params.channels_last and (params.engine == "ddp" or self.world_size == 1)
        weight_format = torch.channels_last if self.weights_channels_last else torch.contiguous_format
        model = model.to(self.device, memory_format=weight_format).train()
        self.model = model
        impl = {"default": {}, "foreach": {"foreach": True}, "fused": {"fused": True}}[params.optimizer_impl]
        optimizer: Any = torch.optim.SGD(model.parameters(), lr=params.lr, momentum=params.momentum, **impl)
        net: Any = model
        if self.world_size == 1:  # nothing to all-reduce: the model and optimizer stay unwrapped
            self.wrapper = "none (world size 1: nothing to all-reduce)"
        elif self.hvd is not None:
            self.hvd.broadcast_parameters(model.state_dict(), root_rank=0)
            self.hvd.broadcast_optimizer_state(optimizer, root_rank=0)
            optimizer = self.hvd.DistributedOptimizer(
                optimizer, named_parameters=model.named_parameters(), op=self.hvd.Average
            )
            self.wrapper = "horovod.torch.DistributedOptimizer"
        else:
            from torch.nn.parallel import DistributedDataParallel

            net = DistributedDataParallel(model, device_ids=[self.local_rank] if want_cuda else None)
            self.wrapper = "torch.nn.parallel.DistributedDataParallel"
        self.net = net
        self.optimizer = optimizer
        mode = None if params.compile_mode == "default" else params.compile_mode
        self.forward: Any = torch.compile(net, backend="inductor", mode=mode) if params.compile == "inductor" else net
        self.graphs = params.compile == "inductor" and params.compile_mode in ("reduce-overhead", "max-autotune")
        self.criterion = torch.nn.CrossEntropyLoss()
        self.scaler = torch.amp.GradScaler("cuda") if params.precision == "fp16" else None
        self.autocast_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(params.precision)
        self._bad = torch.zeros((), dtype=torch.bool, device=self.device)
        self._flag = torch.zeros(1, dtype=torch.int32)
        # the input pipeline (workloads/resnet50_gpu/pipelines/): the same tensors whichever feeds the step
        self.feed = build_feed(
            params, self.device, self.memory_format, rank=self.rank, world_size=self.world_size, ranks_here=local_size()
        )

    def describe(self) -> dict[str, Any]:
        """Engine, device, world size, both batch sizes, precision and versions (JSON-ready)."""
        info: dict[str, Any] = {
            "model": "torchvision.models.resnet50",
            "parameters": sum(p.numel() for p in self.model.parameters()),
            "engine": self.params.engine,
            "backend": self.backend,
            "device": str(self.device),
            "device_name": torch.cuda.get_device_name(self.device) if self.device.type == "cuda" else "cpu",
            "rank": self.rank,
            "local_rank": self.local_rank,
            "world_size": self.world_size,
            "wrapper": self.wrapper,
            "per_rank_batch_size": self.params.batch_size,
            "global_batch_size": self.params.batch_size * self.world_size,
            "precision": self.params.precision,
            "channels_last": self.params.channels_last,
            "weights_channels_last": self.weights_channels_last,
            "compile": self.params.compile,
            "compile_mode": self.params.compile_mode,
            "optimizer_impl": self.params.optimizer_impl,
            "data": self.params.data,
            "input_pipeline": self.params.input_pipeline,
            "preprocessing": dict(self.feed.preprocessing),
            "torch_threads": torch.get_num_threads(),
            "timing": "device sync and barrier at window edges only (sync_each_step=False)"
            + ("; step times from CUDA events around each step" if self.device.type == "cuda" else ""),
        }
        if self.feed.dataset_samples is not None:
            info["dataset_samples"] = self.feed.dataset_samples
        if self.hvd is not None:
            import horovod

            info["horovod"] = {
                "version": horovod.__version__,
                "nccl_built": bool(self.hvd.nccl_built()),
                "gloo_built": bool(self.hvd.gloo_built()),
                "cuda_built": bool(self.hvd.cuda_built()),
                "local_size": int(self.hvd.local_size()),
            }
        return info

    def batches(self) -> Iterator[Any]:
        """Batches forever from the input pipeline: float32 N x 3 x S x S on the device, int64 labels."""
        return self.feed.batches

    def step(self, batch: Any) -> int:
        """One optimizer step; returns the rank's samples (``batch_size``).

        Raises:
            NonFiniteLossError: on CPU, at once; on GPU, at the next window edge.
        """
        x, y = batch
        if self.graphs:  # CUDA graphs: a new iteration, so the last one's outputs may be overwritten
            torch.compiler.cudagraph_mark_step_begin()  # type: ignore[no-untyped-call]
        self.optimizer.zero_grad()  # set_to_none is the default (torch >= 2.0); Horovod takes no argument
        autocast = (
            torch.autocast(self.device.type, dtype=self.autocast_dtype)
            if self.autocast_dtype is not None
            else contextlib.nullcontext()
        )
        with autocast:
            loss = self.criterion(self.forward(x), y)
        if self.scaler is None:
            loss.backward()
            self.optimizer.step()
        else:
            self.scaler.scale(loss).backward()
            if self.hvd is not None and self.world_size > 1:  # Horovod's fp16 recipe: allreduce, then the step
                self.optimizer.synchronize()
                with self.optimizer.skip_synchronize():
                    self.scaler.step(self.optimizer)
            else:
                self.scaler.step(self.optimizer)
            self.scaler.update()
        self.last_loss = loss.detach()
        if self.device.type == "cpu":
            check_loss(loss)
        else:
            self._bad |= ~torch.isfinite(self.last_loss)
        return int(x.shape[0])

    def device_timer(self) -> DeviceTimer | None:
        """CUDA events around each step on this rank's GPU; None on the CPU (host times are exact there)."""
        return CudaEventTimer(self.device) if self.device.type == "cuda" else None

    def loss_trajectory(self) -> dict[str, Any] | None:
        """The loss-trajectory pass (:func:`workloads.trajectory.loss_trajectory`) on this rank's device;
        None when ``trajectory_steps`` is 0. It resets the weights: call it after the measurement."""
        if self.scaler is not None:
            self.scaler = torch.amp.GradScaler("cuda")
        move = lambda x, y: (x.to(self.device).contiguous(memory_format=self.memory_format), y.to(self.device))  # noqa: E731
        p = self.params
        return loss_trajectory(p, self.model, self.optimizer, p.seed, self.step, lambda: self.last_loss, move)

    def synchronize(self) -> None:
        """Wait for the GPU's queued work, check the loss flag, then a barrier across ranks (world size > 1).

        Raises:
            NonFiniteLossError: a loss since the last window edge was NaN or infinite.
        """
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            if bool(self._bad):
                raise NonFiniteLossError("training loss became NaN or infinite; the run is invalid")
        if self.world_size == 1:
            return
        if self.hvd is not None:
            self.hvd.barrier()
        else:
            dist.barrier(group=self._control)

    def agree_done(self, local_done: bool) -> bool:
        """True when every rank has met both minimums of the current window (a MIN over a CPU tensor)."""
        if self.world_size == 1:
            return local_done
        self._flag.fill_(1 if local_done else 0)
        if self.hvd is not None:
            out = self.hvd.allreduce(self._flag, op=self.hvd.Min, name="trainbench.window_done")
            return bool(out.item())
        dist.all_reduce(self._flag, op=dist.ReduceOp.MIN, group=self._control)
        return bool(self._flag.item())

    def all_gather(self, obj: dict[str, Any]) -> list[dict[str, Any]]:
        """Every rank's ``obj``, in rank order, on every rank (over the CPU channel)."""
        if self.hvd is not None:
            return list(self.hvd.allgather_object(obj))
        gathered: list[Any] = [None] * self.world_size
        dist.all_gather_object(gathered, obj, group=self._control)
        return gathered

    def shutdown(self) -> None:
        """Leave the job: ``hvd.shutdown()`` or destroy the process group."""
        if self.hvd is not None:
            self.hvd.shutdown()
        elif dist.is_initialized():
            dist.destroy_process_group()
