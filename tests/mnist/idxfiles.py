"""Writing MNIST-format IDX files for tests, independently of the reader under test.

The layout follows the MNIST page (http://yann.lecun.com/exdb/mnist/): magic
0x00000803 / 0x00000801, big-endian uint32 dimensions, then the bytes.
"""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np
import numpy.typing as npt


def idx_bytes(array: npt.NDArray[np.generic], type_code: int = 0x08) -> bytes:
    """The IDX encoding of ``array`` (big-endian elements) with element type ``type_code``."""
    header = bytes([0, 0, type_code, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + array.astype(array.dtype.newbyteorder(">")).tobytes()


def mnist_arrays(n: int, seed: int = 0) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.uint8]]:
    """n random 28 x 28 uint8 images and labels 0-9."""
    rng = np.random.default_rng(seed)
    return (
        rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8),
        rng.integers(0, 10, size=n, dtype=np.uint8),
    )


def write_split(
    root: Path, prefix: str, images: npt.NDArray[np.uint8], labels: npt.NDArray[np.uint8], gz: bool = False
) -> tuple[Path, Path]:
    """Write ``<prefix>-images-idx3-ubyte`` and ``<prefix>-labels-idx1-ubyte`` (``.gz`` when asked)."""
    root.mkdir(parents=True, exist_ok=True)
    out = []
    for stem, array in ((f"{prefix}-images-idx3-ubyte", images), (f"{prefix}-labels-idx1-ubyte", labels)):
        data = idx_bytes(array)
        path = root / (stem + (".gz" if gz else ""))
        path.write_bytes(gzip.compress(data) if gz else data)
        out.append(path)
    return out[0], out[1]
