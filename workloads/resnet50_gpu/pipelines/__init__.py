"""The input pipelines of the ResNet-50 GPU workload, chosen by ``input_pipeline=`` (one module each).

=================  ===============================================  ==================================
input_pipeline     who decodes and augments                         module
=================  ===============================================  ==================================
synthetic          nobody: one batch resident on the device         :mod:`.tensors` (``synthetic``)
dataloader         DataLoader worker processes (uint8 out)          :mod:`.dataloader`
dali               NVIDIA DALI: nvJPEG on the GPU (CPU: its         :mod:`.dali`
                   CPU backend)
tfdata-service     the workers of a tf.data service                 :mod:`.tfdata`
=================  ===============================================  ==================================

Every pipeline ends in the same :class:`~.tensors.Finisher`, so the step always gets float32
N x 3 x S x S on its device in its memory format, normalised with ImageNet's mean and std, and
int64 labels; the real-data pipelines read the same files with the same labels
(:func:`workloads.image_files.list_images`) and apply the same augmentation (:class:`~.tensors.Augment`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from workloads.image_files import list_images
from workloads.resnet50_gpu.params import ResNet50GPUParams
from workloads.resnet50_gpu.pipelines.tensors import Augment, Batch, Finisher, synthetic

__all__ = ["Augment", "Batch", "Feed", "Finisher", "build_feed"]


@dataclass
class Feed:
    """A rank's input pipeline, built.

    Attributes:
        batches: finished batches, forever (the harness pulls them and times the wait).
        preprocessing: what runs where (``engine``, ``location``, ``workers``, ``cores`` and the
            pipeline's own figures), recorded in the result's workload info.
        dataset_samples: images in data_dir (None for synthetic data).
    """

    batches: Iterator[Batch]
    preprocessing: dict[str, Any] = field(default_factory=dict)
    dataset_samples: int | None = None


def build_feed(
    params: ResNet50GPUParams,
    device: torch.device,
    memory_format: torch.memory_format,
    *,
    rank: int,
    world_size: int,
    ranks_here: int,
    augment: Augment | None = None,
) -> Feed:
    """Build the pipeline ``params.input_pipeline`` names for this rank.

    Args:
        ranks_here: ranks on this host (the DataLoader's memory check counts all their loaders).
        augment: the crop and flip (default: ImageNet training's, at ``params.image_size``).

    Raises:
        workloads.image_files.DataError: data_dir is not a usable class-folder tree, or too small.
        workloads.checks.WorkloadRefused: the DataLoader would not fit in memory, or DALI is missing.
        workloads.mnist_dataheavy.reach.DataServiceError: the tf.data service cannot feed the run.
    """
    finish = Finisher(device, memory_format)
    augment = augment or Augment(params.image_size)
    seed = params.seed + rank
    if params.input_pipeline == "synthetic":
        batches, info = synthetic(finish, params.batch_size, params.image_size, params.num_classes, seed)
        return Feed(batches, info)
    assert params.data_dir is not None  # checked by the params model
    images = list_images(params.data_dir)
    source: Any
    if params.input_pipeline == "dataloader":
        from workloads.resnet50_gpu.pipelines.dataloader import LoaderPipeline

        source = LoaderPipeline(
            images,
            augment,
            finish,
            batch_size=params.batch_size,
            workers=params.num_workers,
            prefetch=params.prefetch,
            rank=rank,
            world_size=world_size,
            ranks_here=ranks_here,
            seed=params.seed,
        )
    elif params.input_pipeline == "dali":
        from workloads.resnet50_gpu.pipelines.dali import DaliPipeline

        source = DaliPipeline(
            images,
            augment,
            finish,
            batch_size=params.batch_size,
            threads=params.num_workers,
            prefetch=params.prefetch,
            rank=rank,
            world_size=world_size,
            seed=params.seed,
        )
    else:
        from workloads.resnet50_gpu.pipelines.tfdata import ServicePipeline

        assert params.data_service is not None  # checked by the params model
        source = ServicePipeline(
            images,
            augment,
            finish,
            address=params.data_service,
            batch_size=params.batch_size,
            parallel_calls=params.num_workers,
            prefetch=params.prefetch,
            timeout_s=params.service_timeout_s,
        )
    return Feed(iter(source), {**source.info, "classes": len(images.classes)}, len(images))
