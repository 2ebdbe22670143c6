"""The ResNet-50 CPU training step."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
import torchvision

from harness.workload import Workload
from workloads.checks import check_loss
from workloads.cpu_precision import resolve_params
from workloads.resnet50_cpu.data import SyntheticImages, cycle, imagefolder, make_loader
from workloads.resnet50_cpu.evaluation import EvalSet, eval_split, evaluate
from workloads.resnet50_cpu.params import ResNet50CPUParams
from workloads.trajectory import loss_trajectory


class ResNet50CPU(Workload):
    """torchvision ResNet-50 trained with SGD and cross-entropy on CPU.

    Implements :class:`harness.workload.Workload`. One ``step`` is zero_grad,
    forward (under bf16 autocast when asked), loss, backward and optimizer step
    on a batch of ``batch_size`` images of 3 x image_size x image_size.
    ``precision=auto`` is decided on this host (:mod:`workloads.cpu_precision`) when the
    caller has not decided it already.

    With ``eval_samples`` > 0, :meth:`evaluate` measures top-1 accuracy on the eval
    split of the data (the rank calls it after the measurement windows).

    Raises (from ``__init__``):
        DataError: the data source cannot feed a batch, or the eval split cannot be formed.
    """

    sync_each_step = True  # CPU work is synchronous: synchronize() costs nothing

    def __init__(self, params: ResNet50CPUParams) -> None:
        if params.precision == "auto":  # the rank decides before building; a direct caller gets the same rule
            params, _ = resolve_params(params)
        self.params = params
        torch.manual_seed(params.seed)
        self.init_seed = params.seed  # the loss trajectory starts from these weights again
        if params.intra_op_threads > 0:
            torch.set_num_threads(params.intra_op_threads)
        model = torchvision.models.resnet50(num_classes=params.num_classes)
        model.train()
        if params.channels_last:
            model = model.to(memory_format=torch.channels_last)
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=params.lr, momentum=params.momentum)
        self.criterion = torch.nn.CrossEntropyLoss()
        self.forward: Any = torch.compile(model, backend="inductor") if params.compile == "inductor" else model
        if params.data == "synthetic":
            dataset: Any = SyntheticImages(params.image_size, params.num_classes)
            shuffle = False
        else:
            assert params.data_dir is not None  # checked by the params model
            dataset = imagefolder(params.data_dir, params.image_size)
            shuffle = True
        self.dataset = dataset
        self.eval_set: EvalSet | None = None
        if params.eval_samples > 0:  # formed before training, so held-out images are never trained on
            self.eval_set, dataset = eval_split(params, dataset)
        self.train_samples = len(dataset)
        self.loader = make_loader(dataset, params.batch_size, params.num_workers, shuffle, params.seed)

    def describe(self) -> dict[str, Any]:
        """What was built: parameter count, dataset size and classes (JSON-ready)."""
        info: dict[str, Any] = {
            "model": "torchvision.models.resnet50",
            "parameters": sum(p.numel() for p in self.model.parameters()),
            "dataset_samples": len(self.dataset),
            "train_samples": self.train_samples,
            "optimizer": "SGD",
            "loss": "CrossEntropyLoss",
        }
        if self.params.data == "imagefolder":
            info["classes"] = len(self.dataset.classes)
        return info

    def evaluate(self) -> dict[str, Any] | None:
        """The evaluation pass (see :func:`workloads.resnet50_cpu.evaluation.evaluate`); None when
        ``eval_samples`` is 0. Call it after the measurement, outside every timed window."""
        if self.eval_set is None:
            return None
        return evaluate(self.model, self.eval_set, self.params)

    def batches(self) -> Iterator[Any]:
        """Batches forever (the DataLoader is cycled epoch after epoch).

        With ``channels_last`` the images are converted here, in the input pipeline, so the
        contiguous original is freed before :meth:`step` runs. The harness holds the batch it
        passes to ``step``; converting inside ``step`` kept both copies (2 x 9.6 MB at batch 16,
        224 px) alive through forward and backward, which the seed study's loop never does.
        """
        if not self.params.channels_last:
            return cycle(self.loader)
        return _channels_last(cycle(self.loader))

    def step(self, batch: Any) -> int:
        """One optimizer step; returns the number of samples.

        Raises:
            NonFiniteLossError: the loss is NaN or infinite.
        """
        x, y = batch
        if self.params.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        self.optimizer.zero_grad(set_to_none=True)
        autocast = (
            torch.autocast("cpu", dtype=torch.bfloat16) if self.params.precision == "bf16" else contextlib.nullcontext()
        )
        with autocast:
            loss = self.criterion(self.forward(x), y)
        loss.backward()
        self.optimizer.step()
        check_loss(loss)
        self.last_loss = loss.detach()
        return int(x.shape[0])

    def loss_trajectory(self) -> dict[str, Any] | None:
        """The loss-trajectory pass (:func:`workloads.trajectory.loss_trajectory`); None when
        ``trajectory_steps`` is 0. It resets the weights: call it after the measurement and the evaluation."""
        return loss_trajectory(
            self.params, self.model, self.optimizer, self.init_seed, self.step, lambda: self.last_loss
        )

    def synchronize(self) -> None:
        """No-op on CPU: every operation has finished when it returns."""


def _channels_last(batches: Iterator[Any]) -> Iterator[Any]:
    """``(images in channels_last, labels)`` for each ``(images, labels)`` of ``batches``; the
    contiguous images are released before the batch is yielded (a generator expression would
    keep them bound in its frame until the next batch)."""
    for x, y in batches:
        converted = x.contiguous(memory_format=torch.channels_last)
        del x
        yield converted, y
