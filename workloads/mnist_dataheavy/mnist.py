"""MNIST arrays: the standard IDX files from a directory, or a synthetic stand-in.

File names are those of the MNIST distribution (LeCun et al.,
http://yann.lecun.com/exdb/mnist/): ``{train,t10k}-{images-idx3,labels-idx1}-ubyte``,
plain or ``.gz``. torchvision's layout (``<dir>/MNIST/raw/``) is found too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt

from workloads.mnist_dataheavy.idx import IdxError, read_idx

IMAGE_MAGIC = 2051
"""Magic number of an MNIST image file: unsigned bytes, 3 dimensions (N x 28 x 28)."""
LABEL_MAGIC = 2049
"""Magic number of an MNIST label file: unsigned bytes, 1 dimension (N)."""
IMAGE_SIDE = 28
"""MNIST images are 28 x 28 pixels."""
NUM_CLASSES = 10
SPLIT_PREFIX = {"train": "train", "test": "t10k"}
"""Split name -> file-name prefix in the MNIST distribution."""

Split = Literal["train", "test"]


class MnistDataError(ValueError):
    """MNIST files that are missing, corrupt or inconsistent; the message says what to do."""


@dataclass(frozen=True)
class MnistArrays:
    """Images and labels of one split.

    Attributes:
        images: uint8, N x 28 x 28, pixel values 0-255.
        labels: int64, N, values 0-9.
        source: where they came from (a directory, or ``synthetic``).
    """

    images: npt.NDArray[np.uint8]
    labels: npt.NDArray[np.int64]
    source: str

    def __len__(self) -> int:
        return int(self.images.shape[0])


def find_file(data_dir: Path, stem: str) -> Path:
    """The file ``stem`` (or ``stem.gz``) in ``data_dir`` or ``data_dir/MNIST/raw``.

    Raises:
        MnistDataError: not found; the message lists where it looked.
    """
    tried: list[Path] = []
    for folder in (data_dir, data_dir / "MNIST" / "raw"):
        for name in (stem, f"{stem}.gz"):
            path = folder / name
            tried.append(path)
            if path.is_file():
                return path
    raise MnistDataError(
        f"MNIST file {stem} not found (looked for {', '.join(str(p) for p in tried)}); "
        f"download the files with `trainbench data fetch mnist --dest {data_dir}` or use data=synthetic"
    )


def load_mnist(data_dir: str | Path, split: Split = "train") -> MnistArrays:
    """Read one split of MNIST from IDX files and check it.

    Raises:
        MnistDataError: a missing directory or file, a corrupt or truncated file
            (the IDX defect is named), images that are not N x 28 x 28, image and
            label counts that differ, or labels outside 0-9.
    """
    root = Path(data_dir)
    if not root.is_dir():
        raise MnistDataError(
            f"data_dir {str(root)!r} is not a directory; run `trainbench data fetch mnist --dest {root}` first"
        )
    prefix = SPLIT_PREFIX[split]
    images_path = find_file(root, f"{prefix}-images-idx3-ubyte")
    labels_path = find_file(root, f"{prefix}-labels-idx1-ubyte")
    try:
        images = read_idx(images_path, IMAGE_MAGIC)
        labels = read_idx(labels_path, LABEL_MAGIC)
    except IdxError as exc:
        raise MnistDataError(f"corrupt MNIST file: {exc}; fetch it again with `trainbench data fetch mnist`") from exc
    if images.shape[1:] != (IMAGE_SIDE, IMAGE_SIDE):
        raise MnistDataError(f"{images_path}: images are {'x'.join(map(str, images.shape[1:]))}, MNIST's are 28x28")
    if images.shape[0] != labels.shape[0]:
        raise MnistDataError(
            f"{images_path} holds {images.shape[0]} images but {labels_path} holds {labels.shape[0]} labels"
        )
    if images.shape[0] == 0:
        raise MnistDataError(f"{images_path} holds no images")
    if int(labels.max()) >= NUM_CLASSES:
        raise MnistDataError(f"{labels_path}: label {int(labels.max())} is outside 0-9")
    return MnistArrays(images.astype(np.uint8), labels.astype(np.int64), str(root))


def synthetic_mnist(samples: int, seed: int) -> MnistArrays:
    """Random MNIST-shaped data: uint8 noise images N x 28 x 28 and uniform labels 0-9.

    The preprocessing chain's cost does not depend on pixel values (every operation
    touches every pixel), so noise measures the same input-pipeline cost as digits.

    Raises:
        ValueError: ``samples`` < 1.
    """
    if samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(samples, IMAGE_SIDE, IMAGE_SIDE), dtype=np.uint8)
    labels = rng.integers(0, NUM_CLASSES, size=samples, dtype=np.int64)
    return MnistArrays(images, labels, "synthetic")
