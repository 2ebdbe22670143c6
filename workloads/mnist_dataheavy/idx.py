"""A strict reader of IDX files, the on-disk format of MNIST.

Format (Y. LeCun, C. Cortes, C. Burges, "The MNIST database of handwritten digits",
http://yann.lecun.com/exdb/mnist/, section "File formats"): a 4-byte magic number,
two zero bytes, one byte for the element type and one for the number of dimensions;
then one big-endian uint32 per dimension; then the elements, big-endian, row-major.
MNIST images have magic 0x00000803 (2051: unsigned bytes, 3 dims N x 28 x 28) and
labels 0x00000801 (2049: unsigned bytes, 1 dim N).

Files may be gzip-compressed (``*.gz``, as the MNIST mirrors serve them).
"""

from __future__ import annotations

import gzip
import math
import struct
from pathlib import Path

import numpy as np
import numpy.typing as npt

IDX_TYPES: dict[int, np.dtype[np.generic]] = {
    0x08: np.dtype(np.uint8),
    0x09: np.dtype(np.int8),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
"""IDX element-type byte -> numpy dtype (big-endian), from the format description."""

MAX_IDX_BYTES = 2**31
"""Largest decompressed IDX payload read (2 GiB; MNIST's largest file is 47 MB)."""


class IdxError(ValueError):
    """A file that is not a well-formed IDX file; the message names the file and the defect."""


def _read_bytes(path: Path) -> bytes:
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as f:
                data = f.read(MAX_IDX_BYTES + 1)
        else:
            with path.open("rb") as f:
                data = f.read(MAX_IDX_BYTES + 1)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        # gzip raises EOFError for a truncated archive and BadGzipFile for a corrupt one
        raise IdxError(f"{path}: cannot read ({type(exc).__name__}: {exc})") from exc
    if len(data) > MAX_IDX_BYTES:
        raise IdxError(f"{path}: larger than {MAX_IDX_BYTES} bytes; not an MNIST-sized IDX file")
    return data


def parse_idx(data: bytes, name: str = "<bytes>", magic: int | None = None) -> npt.NDArray[np.generic]:
    """Parse the bytes of an IDX file.

    Args:
        data: the whole (decompressed) file.
        name: used in error messages.
        magic: the magic number the file must have (e.g. 2051 for MNIST images), or None.

    Returns:
        An array with the file's dimensions, in native byte order (e.g. uint8 N x 28 x 28).

    Raises:
        IdxError: a header shorter than declared, non-zero leading magic bytes, a magic
            number other than ``magic``, an unknown element type, a zero dimension count, or a payload whose size
            differs from the product of the dimensions (truncated or with trailing bytes).
    """
    if len(data) < 4:
        raise IdxError(f"{name}: {len(data)} bytes is too short for an IDX magic number (4 bytes); truncated file?")
    zero0, zero1, type_code, ndim = data[0], data[1], data[2], data[3]
    if zero0 != 0 or zero1 != 0:
        raise IdxError(
            f"{name}: magic number 0x{data[:4].hex()} does not start with two zero bytes; not an IDX file "
            "(was it compressed without a .gz suffix, or is it another format?)"
        )
    found = int.from_bytes(data[:4], "big")
    if magic is not None and found != magic:
        raise IdxError(f"{name}: magic number {found} (0x{found:08x}) where {magic} (0x{magic:08x}) was expected")
    if type_code not in IDX_TYPES:
        raise IdxError(
            f"{name}: unknown IDX element type 0x{type_code:02x}; valid: {sorted(hex(t) for t in IDX_TYPES)}"
        )
    if ndim == 0:
        raise IdxError(f"{name}: the magic number declares 0 dimensions")
    header = 4 + 4 * ndim
    if len(data) < header:
        raise IdxError(f"{name}: the header declares {ndim} dimensions ({header} bytes) but the file has {len(data)}")
    dims = struct.unpack(f">{ndim}I", data[4:header])
    dtype = IDX_TYPES[type_code]
    expected = math.prod(dims) * dtype.itemsize
    actual = len(data) - header
    if actual < expected:
        raise IdxError(
            f"{name}: truncated: dimensions {'x'.join(map(str, dims))} need {expected} bytes of data, found {actual}"
        )
    if actual > expected:
        raise IdxError(
            f"{name}: {actual - expected} trailing bytes after the {expected} bytes that dimensions "
            f"{'x'.join(map(str, dims))} declare; corrupt file"
        )
    array = np.frombuffer(data, dtype=dtype, count=math.prod(dims), offset=header).reshape(dims)
    return array.astype(dtype.newbyteorder("="), copy=True)


def read_idx(path: str | Path, magic: int | None = None) -> npt.NDArray[np.generic]:
    """Read and check one IDX file (``.gz`` is decompressed).

    Args:
        path: the file.
        magic: the magic number it must have, or None for any.

    Raises:
        IdxError: unreadable, corrupt, truncated or of the wrong kind (see :func:`parse_idx`).
    """
    p = Path(path)
    return parse_idx(_read_bytes(p), str(p), magic)
