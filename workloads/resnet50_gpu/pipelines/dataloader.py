"""``input_pipeline=dataloader``: DataLoader workers decode and crop to uint8; the device does the rest.

Each worker process reads a JPEG, decodes it (``torchvision.io.decode_image``, libjpeg-turbo;
CMYK JPEGs and a PNG under a ``.JPEG`` name, as in ImageNet's train split, come out RGB;
torchvision 0.29 deprecates its decoders in favour of TorchCodec, but they decoded and cropped
374-410 images/s per core here against Pillow's 296-344 at 224 px, so they are used while they exist),
random-resized-crops it to ``size`` x ``size`` with antialiasing and flips half of them, all
on uint8 tensors. Batches of uint8 travel to the trainer (a quarter of a float32 batch's bytes),
into pinned memory, and :class:`~workloads.resnet50_gpu.pipelines.tensors.Finisher` converts
and normalises them on the device. Workers persist across epochs and read ``prefetch``
batches ahead each.

The loader's memory is estimated before any worker starts (:func:`loader_memory`) and a
configuration that would not fit is refused with the fix (:class:`LoaderMemoryError`), instead
of the kernel's OOM killer ending the run with nothing said.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import torch
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from torchvision.io import ImageReadMode, decode_image, read_file
from torchvision.transforms import v2

from workloads.checks import WorkloadRefused
from workloads.image_files import DataError, ImageList
from workloads.resnet50_gpu.pipelines.tensors import Augment, Batch, Finisher

WORKER_PRIVATE_BYTES = 256 * 2**20
"""Memory each worker process adds beyond its batches, bytes. Measured here (torch 2.14.1, a
ResNet-50 in the parent before the fork, 500x375 JPEGs cropped to 224): about 18 MiB private
(USS) and 190 MiB proportional (PSS) per worker; 256 MiB leaves room for Python's copy-on-write
of what the workers touch. The file list is a numpy array, so it is never copied that way."""

PINNED_BATCHES = 2
"""Batches the trainer side holds besides the workers' queues (the pinned copy, the one in use)."""

MEMORY_SHARE = 0.8
"""Share of the available memory the loader may plan to use; above it the run is refused."""


class LoaderMemoryError(WorkloadRefused):
    """The DataLoader's planned memory exceeds what this host (or its cgroup, or /dev/shm) can give."""


class JpegFiles(Dataset[tuple[torch.Tensor, int]]):
    """Sample i = (uint8 3 x size x size: file i decoded, random-resized-cropped and maybe flipped; label i)."""

    def __init__(self, images: ImageList, augment: Augment) -> None:
        self.files = np.array(images.files, dtype=np.bytes_)  # one buffer: no per-item refcounts to copy-on-write
        self.labels = np.array(images.labels, dtype=np.int64)
        self.crop = v2.RandomResizedCrop(augment.size, scale=augment.area, ratio=augment.ratio, antialias=True)

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        path = self.files[index].decode()
        image = decode_image(read_file(path), mode=ImageReadMode.RGB)
        image = self.crop(image)
        if torch.rand(()) < 0.5:
            image = image.flip(-1)
        return image, int(self.labels[index])


def available_memory() -> int:
    """Bytes this process can still use: the host's available memory, capped by its cgroup's limit left."""
    free = int(psutil.virtual_memory().available)
    for limit_path, used_path in (
        ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
        ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"),
    ):
        with contextlib.suppress(OSError, ValueError):
            limit, used = Path(limit_path).read_text().strip(), Path(used_path).read_text().strip()
            if limit != "max" and int(limit) < 2**60:
                free = min(free, int(limit) - int(used))
            break
    return free


def loader_memory(batch_bytes: int, workers: int, prefetch: int) -> int:
    """Planned bytes of the loader: each worker's queued batches and its own memory, plus the trainer's batches."""
    return workers * (prefetch * batch_bytes + WORKER_PRIVATE_BYTES) + PINNED_BATCHES * batch_bytes


def check_memory(batch_size: int, size: int, workers: int, prefetch: int, ranks_here: int) -> dict[str, Any]:
    """Refuse a loader that would not fit; returns the plan (bytes) for the run's description.

    Args:
        ranks_here: ranks on this host (each has its own loader).

    Raises:
        LoaderMemoryError: the loaders of this host's ranks would use more than :data:`MEMORY_SHARE`
            of the available memory, or their queued batches more than /dev/shm's free space
            (workers hand batches over in shared memory; a container's default is 64 MB).
    """
    batch_bytes = batch_size * 3 * size * size
    planned = loader_memory(batch_bytes, workers, prefetch) * ranks_here
    free = available_memory()
    plan = {"batch_bytes": batch_bytes, "planned_bytes": planned, "available_bytes": free}
    fix = "lower num_workers, prefetch or batch_size"
    if planned > MEMORY_SHARE * free:
        raise LoaderMemoryError(
            f"the DataLoader would hold about {planned / 2**30:.1f} GiB ({ranks_here} rank(s) x {workers} workers "
            f"x (prefetch {prefetch} x {batch_bytes / 2**20:.0f} MiB per uint8 batch + "
            f"{WORKER_PRIVATE_BYTES / 2**20:.0f} MiB)), more than {MEMORY_SHARE:.0%} of the "
            f"{free / 2**30:.1f} GiB available; {fix}, or give the run more memory"
        )
    shm = Path("/dev/shm")
    if workers > 0 and shm.is_dir():
        queued = workers * prefetch * batch_bytes * ranks_here
        shm_free = shutil.disk_usage(shm).free
        plan["shm_free_bytes"] = shm_free
        if queued > shm_free:
            raise LoaderMemoryError(
                f"the DataLoader workers would queue {queued / 2**20:.0f} MiB of batches in /dev/shm, which has "
                f"{shm_free / 2**20:.0f} MiB free; {fix}, or raise it (docker: --shm-size)"
            )
    return plan


class LoaderPipeline:
    """A rank's shard of the JPEGs through DataLoader workers, epoch after epoch, finished on the device."""

    def __init__(
        self,
        images: ImageList,
        augment: Augment,
        finish: Finisher,
        *,
        batch_size: int,
        workers: int,
        prefetch: int,
        rank: int,
        world_size: int,
        ranks_here: int,
        seed: int,
    ) -> None:
        self.memory = check_memory(batch_size, augment.size, workers, prefetch, ranks_here)
        dataset = JpegFiles(images, augment)
        self.sampler: DistributedSampler[Any] = DistributedSampler(
            dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=seed, drop_last=True
        )
        if len(self.sampler) < batch_size:
            raise DataError(
                f"the dataset has {len(images)} samples, {len(self.sampler)} per rank, fewer than "
                f"batch_size={batch_size}; lower batch_size or add data"
            )
        pin = finish.device.type == "cuda"
        g = torch.Generator().manual_seed(seed + rank)
        self.loader: DataLoader[Any] = DataLoader(
            dataset,
            batch_size=batch_size,
            sampler=self.sampler,
            num_workers=workers,
            prefetch_factor=prefetch if workers > 0 else None,
            pin_memory=pin,
            drop_last=True,
            persistent_workers=workers > 0,
            generator=g,
        )
        self.finish = finish
        self.epoch = 0
        self.info: dict[str, Any] = {
            "engine": "torch DataLoader",
            "location": "trainer process" if workers == 0 else "DataLoader worker processes on the trainer's host",
            "workers": workers,
            "cores": len(os.sched_getaffinity(0)),
            "prefetch_per_worker": prefetch if workers > 0 else 0,
            "pin_memory": pin,
            "memory_plan": self.memory,
        }

    def __iter__(self) -> Iterator[Batch]:
        while True:
            self.sampler.set_epoch(self.epoch)
            self.epoch += 1
            for images, labels in self.loader:
                yield self.finish(images, labels)
