"""The IDX parser and MNIST loader on real files the test writes, good and broken."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from tests.mnist.idxfiles import idx_bytes, mnist_arrays, write_split
from workloads.mnist_dataheavy.idx import IdxError, parse_idx, read_idx
from workloads.mnist_dataheavy.mnist import MnistDataError, load_mnist, synthetic_mnist

TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: np.int16, 0x0C: np.int32, 0x0D: np.float32, 0x0E: np.float64}


@pytest.mark.parametrize("gz", [False, True])
def test_load_mnist_reads_what_was_written(tmp_path: Path, gz: bool) -> None:
    images, labels = mnist_arrays(12)
    write_split(tmp_path, "train", images, labels, gz=gz)
    data = load_mnist(tmp_path, "train")
    assert data.images.dtype == np.uint8 and data.images.shape == (12, 28, 28)
    np.testing.assert_array_equal(data.images, images)
    np.testing.assert_array_equal(data.labels, labels.astype(np.int64))
    assert data.source == str(tmp_path)


def test_torchvision_layout_and_test_split(tmp_path: Path) -> None:
    images, labels = mnist_arrays(5, seed=3)
    write_split(tmp_path / "MNIST" / "raw", "t10k", images, labels)
    np.testing.assert_array_equal(load_mnist(tmp_path, "test").images, images)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(sorted(TYPES)), st.data())
def test_parse_roundtrip_every_element_type(code: int, data: st.DataObject) -> None:
    shape = data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple))
    array = data.draw(arrays(TYPES[code], shape, elements={"allow_nan": False} if code >= 0x0D else None))
    parsed = parse_idx(idx_bytes(array, code))
    assert parsed.shape == array.shape
    np.testing.assert_array_equal(parsed, array)


@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=1, max_value=16 + 3 * 784 - 1))  # leaves 1 to 2367 of 2368 bytes
def test_every_truncation_is_refused(cut: int) -> None:
    images, _ = mnist_arrays(3)
    raw = idx_bytes(images)
    with pytest.raises(IdxError):
        parse_idx(raw[: len(raw) - cut])


def test_truncated_file_names_the_shortfall(tmp_path: Path) -> None:
    images, labels = mnist_arrays(4)
    img, _ = write_split(tmp_path, "train", images, labels)
    img.write_bytes(img.read_bytes()[:-10])
    with pytest.raises(MnistDataError, match=r"truncated: dimensions 4x28x28 need 3136 bytes of data, found 3126"):
        load_mnist(tmp_path)


def test_trailing_bytes_are_refused(tmp_path: Path) -> None:
    images, labels = mnist_arrays(4)
    _, lab = write_split(tmp_path, "train", images, labels)
    lab.write_bytes(lab.read_bytes() + b"\x00\x01")
    with pytest.raises(MnistDataError, match="2 trailing bytes"):
        load_mnist(tmp_path)


def test_swapped_files_fail_on_magic_number(tmp_path: Path) -> None:
    images, labels = mnist_arrays(4)
    img, lab = write_split(tmp_path, "train", images, labels)
    a, b = img.read_bytes(), lab.read_bytes()
    img.write_bytes(b)
    lab.write_bytes(a)
    with pytest.raises(MnistDataError, match=r"magic number 2049 \(0x00000801\) where 2051 \(0x00000803\)"):
        load_mnist(tmp_path)


def test_compressed_file_without_gz_suffix_is_not_idx(tmp_path: Path) -> None:
    images, labels = mnist_arrays(4)
    img, _ = write_split(tmp_path, "train", images, labels)
    img.write_bytes(gzip.compress(img.read_bytes()))
    with pytest.raises(MnistDataError, match="does not start with two zero bytes; not an IDX file"):
        load_mnist(tmp_path)


def test_truncated_gzip_archive(tmp_path: Path) -> None:
    images, labels = mnist_arrays(40)
    img, _ = write_split(tmp_path, "train", images, labels, gz=True)
    img.write_bytes(img.read_bytes()[:-200])
    with pytest.raises(MnistDataError, match="cannot read"):
        load_mnist(tmp_path)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"\x00\x00", "too short for an IDX magic number"),
        (b"\x00\x00\x08\x03\x00\x00", r"declares 3 dimensions \(16 bytes\) but the file has 6"),
        (b"\x00\x00\x07\x01\x00\x00\x00\x01\x00", "unknown IDX element type 0x07"),
        (b"\x00\x00\x08\x00", "declares 0 dimensions"),
    ],
)
def test_malformed_headers(raw: bytes, message: str) -> None:
    with pytest.raises(IdxError, match=message):
        parse_idx(raw)


def test_inconsistent_and_out_of_range_content(tmp_path: Path) -> None:
    images, labels = mnist_arrays(6)
    write_split(tmp_path, "train", images, labels[:5])
    with pytest.raises(MnistDataError, match=r"holds 6 images but .* holds 5 labels"):
        load_mnist(tmp_path)
    bad = labels.copy()
    bad[2] = 12
    write_split(tmp_path, "train", images, bad)
    with pytest.raises(MnistDataError, match="label 12 is outside 0-9"):
        load_mnist(tmp_path)
    write_split(tmp_path, "train", np.zeros((6, 14, 14), np.uint8), labels)
    with pytest.raises(MnistDataError, match="images are 14x14, MNIST's are 28x28"):
        load_mnist(tmp_path)


def test_missing_files_say_how_to_fetch(tmp_path: Path) -> None:
    with pytest.raises(MnistDataError, match="trainbench data fetch mnist --dest"):
        load_mnist(tmp_path)
    with pytest.raises(MnistDataError, match="is not a directory"):
        load_mnist(tmp_path / "nowhere")


def test_read_idx_of_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(IdxError, match="cannot read"):
        read_idx(tmp_path / "absent-idx1-ubyte")


def test_synthetic_mode() -> None:
    data = synthetic_mnist(100, seed=1)
    assert data.images.shape == (100, 28, 28) and data.images.dtype == np.uint8
    assert set(np.unique(data.labels)) <= set(range(10)) and len(np.unique(data.labels)) > 5
    np.testing.assert_array_equal(synthetic_mnist(100, seed=1).images, data.images)
    with pytest.raises(ValueError, match=">= 1"):
        synthetic_mnist(0, seed=1)
