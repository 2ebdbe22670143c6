"""What every input pipeline hands the step, made in one place: the device-side finish of a uint8 batch.

Each pipeline delivers uint8 images N x 3 x S x S (in any memory layout: the DataLoader's are
NCHW, DALI's and tf.data's NHWC seen through a permute) and labels of any integer type. The
finish copies them to the device (non-blocking from pinned memory), converts to float32 and
normalises with ImageNet's mean and std there, in the model's memory format, and makes the
labels int64 N. So the float conversion never costs the CPU, and the bytes between processes and
over PCIe are a quarter of a float32 batch's.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from workloads.image_files import IMAGENET_MEAN, IMAGENET_STD

Batch = tuple[torch.Tensor, torch.Tensor]


@dataclass(frozen=True)
class Augment:
    """The training augmentation every pipeline applies: random-resized crop, then a horizontal flip (p = 0.5).

    Attributes:
        size: output side, px (the workload's image_size).
        area: range of the crop's area as a fraction of the image's (torchvision's and
            DALI's default for ImageNet training: 0.08-1).
        ratio: range of the crop's width / height (3/4-4/3).
    """

    size: int
    area: tuple[float, float] = (0.08, 1.0)
    ratio: tuple[float, float] = (3 / 4, 4 / 3)


class Finisher:
    """uint8 images and labels -> the step's float32 normalised images and int64 labels, on ``device``.

    Args:
        device: the step's device.
        memory_format: the model's input layout (``torch.channels_last`` or ``torch.contiguous_format``).
    """

    def __init__(self, device: torch.device, memory_format: torch.memory_format) -> None:
        self.device = device
        self.memory_format = memory_format
        self.mean = torch.tensor(IMAGENET_MEAN, device=device).mul_(255).view(1, 3, 1, 1)
        self.std = torch.tensor(IMAGENET_STD, device=device).mul_(255).view(1, 3, 1, 1)

    def __call__(self, images: torch.Tensor, labels: torch.Tensor) -> Batch:
        """Finish one batch.

        Args:
            images: uint8 N x 3 x S x S on the host or the device.
            labels: integers, N or N x 1.

        Raises:
            ValueError: images are not uint8 N x 3 x H x W.
        """
        if images.dtype != torch.uint8 or images.dim() != 4 or images.shape[1] != 3:
            raise ValueError(f"a pipeline must deliver uint8 N x 3 x H x W images, got {images.dtype} {images.shape}")
        x = images.to(self.device, non_blocking=True).to(memory_format=self.memory_format)
        x = x.float().sub_(self.mean).div_(self.std)
        y = labels.to(self.device, non_blocking=True).reshape(-1).long()
        return x, y


def synthetic(
    finish: Finisher, batch_size: int, size: int, num_classes: int, seed: int
) -> tuple[Iterator[Batch], dict[str, Any]]:
    """The resident batch: random pixels finished like real ones, repeated forever (nothing is loaded).

    Returns:
        (the batches, the ``preprocessing`` description).
    """
    g = torch.Generator(device="cpu").manual_seed(seed)
    pixels = torch.randint(0, 256, (batch_size, 3, size, size), generator=g, dtype=torch.uint8)
    labels = torch.randint(0, num_classes, (batch_size,), generator=g)
    batch = finish(pixels, labels)

    def forever() -> Iterator[Batch]:
        while True:
            yield batch

    return forever(), {"engine": "synthetic", "location": "one batch resident on the device", "workers": 0, "cores": 0}
