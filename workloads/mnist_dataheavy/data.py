"""The DataLoader input path: MNIST samples preprocessed by the torchvision chain."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset

from workloads.mnist_dataheavy.chain import TorchChain
from workloads.mnist_dataheavy.mnist import MnistArrays, MnistDataError


class PreprocessedMnist(Dataset[tuple[torch.Tensor, int]]):
    """Sample i = (chain(image i) float32 1 x 28 x 28, label i); the chain runs in ``__getitem__``,
    so in the DataLoader's worker processes (or in the trainer when there are none)."""

    def __init__(self, arrays: MnistArrays, chain: TorchChain) -> None:
        self.arrays = arrays
        self.chain = chain

    def __len__(self) -> int:
        return len(self.arrays)

    def raw(self, index: int) -> torch.Tensor:
        """Image ``index`` before preprocessing: uint8 1 x 28 x 28."""
        return torch.from_numpy(self.arrays.images[index]).unsqueeze(0)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        return self.chain(self.raw(index)), int(self.arrays.labels[index])


def make_loader(
    dataset: PreprocessedMnist,
    *,
    batch_size: int,
    num_workers: int,
    prefetch: int,
    pin_memory: bool,
    seed: int,
) -> DataLoader[Any]:
    """A shuffling DataLoader that drops the last partial batch; workers persist across epochs.

    Raises:
        MnistDataError: the dataset has fewer samples than one batch.
    """
    if len(dataset) < batch_size:
        raise MnistDataError(
            f"the dataset has {len(dataset)} samples, fewer than batch_size={batch_size}; lower batch_size"
        )
    g = torch.Generator()
    g.manual_seed(seed)
    return DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=True,
        num_workers=num_workers,
        prefetch_factor=prefetch if num_workers > 0 else None,
        pin_memory=pin_memory,
        drop_last=True,
        persistent_workers=num_workers > 0,
        generator=g,
    )


def cycle(loader: DataLoader[Any]) -> Iterator[Any]:
    """Yield batches forever, one epoch after another.

    Without worker processes the batch is preprocessed here, in the trainer; it then
    runs on one torch thread, as it does in each DataLoader worker (torch sets one
    thread there). Per-sample transforms gain nothing from intra-op threads, and on
    a busy machine their synchronization made the chain 3-20 times slower here.
    """
    single = loader.num_workers == 0
    while True:
        it = iter(loader)
        while True:
            threads = torch.get_num_threads()
            if single:
                torch.set_num_threads(1)
            try:
                batch = next(it)
            except StopIteration:
                break
            finally:
                if single:
                    torch.set_num_threads(threads)
            yield batch
