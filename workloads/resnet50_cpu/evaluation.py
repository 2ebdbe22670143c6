"""The evaluation pass of ResNet-50: top-1 accuracy on the eval split of the run's data.

It runs once, after every timed window (the rank calls it; the harness never times it),
with ``model.eval()`` and no gradients, so nothing it does is in a measured figure. Its
accuracy is what an MLPerf export logs as ``eval_accuracy``: measured, never invented.

The eval split of each data source:
- ``synthetic``: ``eval_samples`` random images with random labels, drawn with a seed
  different from training's. Images and labels are independent, so the accuracy is chance
  level (1 / num_classes) by construction; the record says so.
- ``imagefolder`` with a ``val/`` folder of class folders in ``data_dir``: up to
  ``eval_samples`` of its images (a seeded sample), with the training folder's label ids.
- ``imagefolder`` without one: ``eval_samples`` images held out of the training folder by a
  seeded permutation; training never sees them.
Images are resized to ``image_size * 256 / 224`` and center-cropped to ``image_size``, the
evaluation transform of torchvision's reference recipe.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset, Subset
from torchvision import transforms

from workloads.resnet50_cpu.data import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    ClassFolder,
    DataError,
    val_split_dir,
)
from workloads.resnet50_cpu.params import ResNet50CPUParams

EVAL_SEED_OFFSET = 1_000_003
"""Added to the run's seed for the synthetic eval set, so it never repeats a training draw."""


class SyntheticEvalImages(Dataset[tuple[torch.Tensor, int]]):
    """``length`` N(0, 1) images of 3 x size x size with uniform random labels.

    Sample ``i`` comes from its own generator seeded with ``(seed, i)``, so the set is the
    same on every read and in every DataLoader worker.
    """

    def __init__(self, length: int, image_size: int, num_classes: int, seed: int) -> None:
        self.length = length
        self.image_size = image_size
        self.num_classes = num_classes
        self.seed = seed

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        if not 0 <= index < self.length:
            raise IndexError(f"sample {index} of a {self.length}-sample eval set")
        g = torch.Generator()
        g.manual_seed((self.seed * 0x9E3779B1 + index) % 2**63)
        image = torch.randn(3, self.image_size, self.image_size, generator=g)
        return image, int(torch.randint(self.num_classes, (1,), generator=g))


@dataclass(frozen=True)
class EvalSet:
    """The eval split a run evaluates on.

    Attributes:
        dataset: (image, label) pairs, already transformed.
        split: ``synthetic`` (a seeded synthetic set), ``val`` (the ``val/`` folder) or
            ``held-out`` (images held out of the training folder).
        description: which data this is, in words, for the result and the MLPerf log.
        requested: ``eval_samples`` as asked for (``val`` may hold fewer images).
    """

    dataset: Dataset[Any]
    split: str
    description: str
    requested: int


def eval_transform(image_size: int) -> transforms.Compose:
    """Resize to ``image_size * 256 / 224``, center crop ``image_size``, normalize (torchvision's reference)."""
    return transforms.Compose(
        [
            transforms.Resize(round(image_size * 256 / 224)),
            transforms.CenterCrop(image_size),
            transforms.ToTensor(),
            transforms.Normalize(IMAGENET_MEAN, IMAGENET_STD),
        ]
    )


def _permutation(n: int, seed: int) -> list[int]:
    g = torch.Generator()
    g.manual_seed(seed % 2**63)
    return [int(i) for i in torch.randperm(n, generator=g)]


def eval_split(params: ResNet50CPUParams, train: Dataset[Any]) -> tuple[EvalSet, Dataset[Any]]:
    """The eval set for ``params.eval_samples`` (> 0) and the dataset left for training.

    ``train`` is the training dataset as built for the run (a :class:`ClassFolder` for
    ``imagefolder``); it comes back unchanged unless images are held out of it.

    Raises:
        DataError: the eval split cannot be formed (a ``val/`` class unknown to training,
            no images, or too few training images left for one batch).
    """
    k = params.eval_samples
    if params.data == "synthetic":
        seed = params.seed + EVAL_SEED_OFFSET
        text = (
            f"synthetic: {k} N(0,1) images of 3x{params.image_size}x{params.image_size} with uniform random labels "
            f"over {params.num_classes} classes, seed {seed} (training's seed is {params.seed}); images and labels "
            f"are independent, so accuracy is chance level ({1 / params.num_classes:.4g}) by construction"
        )
        return EvalSet(SyntheticEvalImages(k, params.image_size, params.num_classes, seed), "synthetic", text, k), train
    if not isinstance(train, ClassFolder):
        raise DataError("an imagefolder eval split needs the training ImageFolder")
    root = Path(str(params.data_dir))
    val = val_split_dir(root)
    if val is not None:
        unknown = sorted({d.name for d in val.iterdir() if d.is_dir()} - set(train.classes))
        if unknown:
            raise DataError(f"{val} holds classes that the training folder lacks: {', '.join(unknown[:10])}")
        try:
            folder = ClassFolder(val, eval_transform(params.image_size), train.classes, allow_empty=True)
        except (FileNotFoundError, RuntimeError) as exc:
            raise DataError(f"{val} is not a usable ImageFolder tree: {exc}") from exc
        if len(folder) == 0:
            raise DataError(f"{val} holds no images; add images or remove the folder")
        chosen = sorted(_permutation(len(folder), params.seed)[:k])
        text = (
            f"imagefolder: {len(chosen)} of the {len(folder)} images in {val} (a seeded sample, seed {params.seed}), "
            f"{len(train.classes)} classes"
        )
        return EvalSet(Subset(folder, chosen), "val", text, k), train
    n = len(train)
    if n - k < params.batch_size:
        raise DataError(
            f"holding out eval_samples={k} of the {n} images in {root} leaves {max(n - k, 0)} for training, fewer "
            f"than batch_size={params.batch_size}; lower eval_samples, add images, or add a val/ folder"
        )
    perm = _permutation(n, params.seed)
    held, kept = sorted(perm[:k]), sorted(perm[k:])
    same_files = ClassFolder(root, eval_transform(params.image_size), train.classes)
    text = (
        f"imagefolder: {k} of the {n} images in {root} held out of training (seeded permutation, seed "
        f"{params.seed}), {len(train.classes)} classes"
    )
    return EvalSet(Subset(same_files, held), "held-out", text, k), Subset(train, kept)


def evaluate(model: torch.nn.Module, eval_set: EvalSet, params: ResNet50CPUParams) -> dict[str, Any]:
    """Top-1 accuracy of ``model`` on ``eval_set`` (no gradients, ``model.eval()``; train mode restored).

    Uses the run's precision (bf16 autocast or fp32) and memory format, batches of
    ``params.batch_size`` (the last one may be smaller).

    Returns:
        JSON-ready: ``accuracy`` (correct / samples, 0..1), ``correct``, ``samples``,
        ``requested_samples``, ``metric``, ``split``, ``data``, ``dataset`` (which data, in
        words), ``num_classes`` (model outputs), ``chance_accuracy`` (1 / num_classes for
        synthetic data, where it holds by construction; else None), ``precision``.

    Raises:
        DataError: the eval split gave no samples.
    """
    loader = DataLoader(eval_set.dataset, batch_size=params.batch_size, shuffle=False, num_workers=params.num_workers)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16) if params.precision == "bf16" else contextlib.nullcontext()
    correct = seen = 0
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for x, y in loader:
                if params.channels_last:
                    x = x.contiguous(memory_format=torch.channels_last)
                with autocast:
                    logits = model(x)
                correct += int((logits.argmax(dim=1) == y).sum())
                seen += int(y.shape[0])
    finally:
        model.train(was_training)
    if seen == 0:
        raise DataError(f"the eval split ({eval_set.description}) gave no samples")
    return {
        "metric": "top-1 accuracy",
        "accuracy": correct / seen,
        "correct": correct,
        "samples": seen,
        "requested_samples": eval_set.requested,
        "split": eval_set.split,
        "data": params.data,
        "dataset": eval_set.description,
        "num_classes": params.num_classes,
        "chance_accuracy": 1 / params.num_classes if params.data == "synthetic" else None,
        "precision": params.precision,
    }
