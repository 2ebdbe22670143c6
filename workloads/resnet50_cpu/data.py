"""Data pipelines for ResNet-50: synthetic tensors and an ImageFolder of real JPEGs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset
from torchvision import datasets, transforms

from workloads.image_files import IMAGENET_MEAN as IMAGENET_MEAN
from workloads.image_files import IMAGENET_STD as IMAGENET_STD
from workloads.image_files import VAL_SPLIT_DIR as VAL_SPLIT_DIR
from workloads.image_files import DataError as DataError
from workloads.image_files import val_split_dir as val_split_dir


class SyntheticImages(Dataset[tuple[torch.Tensor, int]]):
    """Random 3 x size x size float32 images with labels ``index % num_classes``.

    As in the seed study, each sample is generated in ``__getitem__``, so data
    generation is part of the input pipeline the harness times.
    """

    def __init__(self, image_size: int, num_classes: int, length: int = 1_000_000) -> None:
        self.image_size = image_size
        self.num_classes = num_classes
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        return torch.randn(3, self.image_size, self.image_size), index % self.num_classes


class ClassFolder(datasets.ImageFolder):  # type: ignore[misc]  # torchvision has no type hints
    """ImageFolder over a fixed, ordered list of class folders (the same label ids in every split)."""

    def __init__(self, root: Path, transform: Any, classes: list[str], allow_empty: bool = False) -> None:
        self.fixed_classes = list(classes)
        super().__init__(str(root), transform=transform, allow_empty=allow_empty)

    def find_classes(self, directory: str | Path) -> tuple[list[str], dict[str, int]]:
        """The fixed classes, indexed in their given order."""
        return list(self.fixed_classes), {c: i for i, c in enumerate(self.fixed_classes)}


def train_transform(image_size: int) -> transforms.Compose:
    """The standard training augmentation: RandomResizedCrop, horizontal flip, normalize."""
    return transforms.Compose(
        [
            transforms.RandomResizedCrop(image_size),
            transforms.RandomHorizontalFlip(),
            transforms.ToTensor(),
            transforms.Normalize(IMAGENET_MEAN, IMAGENET_STD),
        ]
    )


def imagefolder(root: str | Path, image_size: int) -> datasets.ImageFolder:
    """ImageFolder with the standard training augmentation (RandomResizedCrop, flip, normalize).

    The classes are the sub-directories of ``root`` in sorted order, except a ``val/``
    evaluation split (see :func:`val_split_dir`), which is never trained on.

    Raises:
        DataError: the directory is missing or holds no class folders with images.
    """
    path = Path(root)
    if not path.is_dir():
        raise DataError(f"data_dir {str(path)!r} is not a directory; point data_dir at an ImageFolder tree")
    split = val_split_dir(path)
    classes = sorted(d.name for d in path.iterdir() if d.is_dir() and not (split is not None and d == split))
    if not classes:
        raise DataError(
            f"data_dir {str(path)!r} is not a usable ImageFolder tree: it holds no class folders (one per class)"
        )
    try:
        return ClassFolder(path, train_transform(image_size), classes)
    except (FileNotFoundError, RuntimeError) as exc:
        raise DataError(f"data_dir {str(path)!r} is not a usable ImageFolder tree: {exc}") from exc


def make_loader(dataset: Dataset[Any], batch_size: int, num_workers: int, shuffle: bool, seed: int) -> DataLoader[Any]:
    """A DataLoader that drops the last partial batch (every step has ``batch_size`` samples).

    Raises:
        DataError: the dataset has fewer samples than one batch.
    """
    n = len(dataset)  # type: ignore[arg-type]
    if n < batch_size:
        raise DataError(
            f"the dataset has {n} samples, fewer than batch_size={batch_size}; lower batch_size or add data"
        )
    g = torch.Generator()
    g.manual_seed(seed)
    return DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=shuffle,
        num_workers=num_workers,
        drop_last=True,
        persistent_workers=num_workers > 0,
        generator=g,
    )


def cycle(loader: DataLoader[Any]) -> Iterator[Any]:
    """Yield batches forever, one epoch after another."""
    while True:
        yield from loader
