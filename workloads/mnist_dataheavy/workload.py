"""The MNIST data-heavy training step, fed by one of three input pipelines."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from typing import Any

import torch
import torch.nn.functional as F

from harness.device_timer import CudaEventTimer, DeviceTimer
from harness.workload import Workload
from workloads.checks import check_loss
from workloads.mnist_dataheavy.chain import TorchChain, cpu_ms_per_sample
from workloads.mnist_dataheavy.data import PreprocessedMnist, cycle, make_loader
from workloads.mnist_dataheavy.mnist import MnistArrays, MnistDataError, load_mnist, synthetic_mnist
from workloads.mnist_dataheavy.model import MnistNet
from workloads.mnist_dataheavy.params import MnistDataHeavyParams
from workloads.mnist_dataheavy.reach import DataServiceError, check_reachable

PROBE_SETTLE_S = 3.0
"""Before the run, batches are read from a tf.data service until no new worker has delivered one for this
many seconds (``TfBatches.probe``): set-up time, not warm-up, that records which workers serve the run."""


class MnistDataHeavy(Workload):
    """The PyTorch MNIST example net, trained with Adadelta on NLL loss, on batches of
    ``batch_size`` images 1 x 28 x 28 that a CPU-heavy chain preprocessed.

    Implements :class:`harness.workload.Workload`. The chain's cost is measured at
    set-up, in CPU ms per sample, and reported by :meth:`describe` with where the
    preprocessing runs and on how many workers and cores.

    Raises (from ``__init__``):
        workloads.mnist_dataheavy.mnist.MnistDataError: missing, corrupt or too little data.
        workloads.mnist_dataheavy.reach.DataServiceError: the tf.data service is
            unreachable or sends nothing.
        RuntimeError: device=cuda without a usable GPU.
    """

    sync_each_step = True

    def __init__(self, params: MnistDataHeavyParams) -> None:
        self.params = params
        torch.manual_seed(params.seed)
        if params.intra_op_threads > 0:
            torch.set_num_threads(params.intra_op_threads)
        if params.device == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("device=cuda but torch sees no CUDA GPU; use device=cpu")
        if params.data_service:
            check_reachable(params.data_service, params.service_timeout_s)  # before anything heavy
        self.device = torch.device(params.device)
        self.pin = params.pin_memory and torch.cuda.is_available()
        self.arrays: MnistArrays = (
            load_mnist(params.data_dir, params.split)
            if params.data == "idx" and params.data_dir
            else synthetic_mnist(params.synthetic_samples, params.seed)
        )
        if len(self.arrays) < params.batch_size:
            raise MnistDataError(
                f"the dataset has {len(self.arrays)} samples, fewer than batch_size={params.batch_size}"
            )
        self.model = MnistNet().to(self.device)
        self.model.train()
        self.optimizer = torch.optim.Adadelta(self.model.parameters(), lr=params.lr)
        self.preprocessing: dict[str, Any] = {
            "engine": {"dataloader": "torch DataLoader", "tfdata": "tf.data", "tfdata-service": "tf.data service"}[
                params.input_pipeline
            ],
            "chain_repeats": params.preprocess_repeats,
            "chain_side_px": 28 * params.upscale,
            "pin_memory_effective": self.pin,
            "trainer_host": socket.gethostname(),
            "trainer_cpus": sorted(os.sched_getaffinity(0)),
        }
        self._batches: Any
        if params.input_pipeline == "dataloader":
            self._setup_dataloader()
        else:
            self._setup_tfdata()

    def _setup_dataloader(self) -> None:
        p = self.params
        dataset = PreprocessedMnist(self.arrays, TorchChain(p.preprocess_repeats, p.upscale))
        n = min(p.calibration_samples, len(dataset))
        self.preprocessing["cpu_ms_per_sample"] = cpu_ms_per_sample(lambda i: dataset.chain(dataset.raw(i)), range(n))
        self.preprocessing["calibration_samples"] = n
        self.preprocessing.update(
            placement="trainer" if p.num_workers == 0 else "local workers",
            location="trainer process" if p.num_workers == 0 else "DataLoader worker processes on the trainer's host",
            workers=p.num_workers,
            cores=len(os.sched_getaffinity(0)),
        )
        self.loader = make_loader(
            dataset,
            batch_size=p.batch_size,
            num_workers=p.num_workers,
            prefetch=p.prefetch,
            pin_memory=self.pin,
            seed=p.seed,
        )
        self._batches = None

    def _setup_tfdata(self) -> None:
        p = self.params
        try:
            from workloads.mnist_dataheavy import tf_pipeline as tp
        except ImportError as exc:
            raise DataServiceError(
                f"input_pipeline={p.input_pipeline} needs TensorFlow ({exc}); install trainbench's "
                "offload extra: pip install -e '.[offload]'"
            ) from exc

        n = min(p.calibration_samples, len(self.arrays))
        self.preprocessing["cpu_ms_per_sample"] = tp.cpu_ms_per_sample(self.arrays, p.preprocess_repeats, p.upscale, n)
        self.preprocessing["calibration_samples"] = n
        remote = p.input_pipeline == "tfdata-service"
        ds = tp.build_dataset(
            self.arrays,
            repeats=p.preprocess_repeats,
            upscale=p.upscale,
            batch_size=p.batch_size,
            parallel_calls=p.num_workers if remote else (p.num_workers or None),
            shuffle=p.data == "idx",
            seed=None if remote else p.seed,
        )
        if remote:
            assert p.data_service is not None  # checked by the params model
            ds = tp.service_dataset(ds, p.data_service, f"trainbench-{uuid.uuid4().hex[:12]}", p.prefetch)
        else:
            ds = tp.local_dataset(ds, p.num_workers, p.prefetch)
        batches = tp.TfBatches(ds, self.pin)
        source = f"the tf.data service at {p.data_service}" if remote else "the local tf.data pipeline"
        origins = batches.probe(PROBE_SETTLE_S if remote else 0.0, p.service_timeout_s, source)
        here = socket.gethostname()
        if not remote:
            placement, location = "trainer", "trainer process (tf.data threads)"
        elif all(o.host != here for o in origins):
            placement, location = "remote", "remote hosts (tf.data service workers)"
        else:
            placement = "remote (loopback)"
            location = "tf.data service worker processes on the trainer's host (loopback)"
        cores_by_host: dict[str, set[int]] = {}
        for o in origins:
            cores_by_host.setdefault(o.host, set()).update(o.cpus)
        self.preprocessing.update(
            placement=placement,
            location=location,
            workers=len(origins) if remote else p.num_workers,
            cores=sum(len(c) for c in cores_by_host.values()),
            hosts=sorted(cores_by_host),
            producers=[{**o.to_dict(), "probe_batches": k} for o, k in origins.items()],
        )
        if remote:
            self.preprocessing["dispatcher"] = p.data_service
        self._batches = batches

    def describe(self) -> dict[str, Any]:
        """What was built (JSON-ready): model, data, and ``preprocessing``: engine, location,
        workers, cores, chain repeats and side, measured ``cpu_ms_per_sample``."""
        return {
            "model": "MnistNet (PyTorch MNIST example)",
            "parameters": sum(p.numel() for p in self.model.parameters()),
            "optimizer": "Adadelta",
            "loss": "NLLLoss",
            "device": str(self.device),
            "dataset_samples": len(self.arrays),
            "data_source": self.arrays.source,
            "preprocessing": dict(self.preprocessing),
        }

    def batches(self) -> Iterator[Any]:
        """Batches forever: DataLoader epochs cycled, or the endless tf.data stream."""
        if self._batches is not None:
            return iter(self._batches)
        return cycle(self.loader)

    def step(self, batch: Any) -> int:
        """One optimizer step; returns the number of samples.

        Raises:
            NonFiniteLossError: the loss is NaN or infinite.
        """
        x, y = batch
        x = x.to(self.device, non_blocking=self.pin)
        y = y.to(self.device, non_blocking=self.pin)
        self.optimizer.zero_grad(set_to_none=True)
        loss = F.nll_loss(self.model(x), y)
        loss.backward()  # type: ignore[no-untyped-call]  # torch leaves Tensor.backward unannotated
        self.optimizer.step()
        check_loss(loss)
        return int(x.shape[0])

    def synchronize(self) -> None:
        """CUDA sync on the GPU; a no-op on CPU, where every operation has finished when it returns."""
        if self.device.type == "cuda":
            torch.cuda.synchronize()

    def device_timer(self) -> DeviceTimer | None:
        """CUDA events around each step on the GPU (the device's own step time); None on the CPU."""
        return CudaEventTimer(self.device) if self.device.type == "cuda" else None
