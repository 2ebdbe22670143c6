"""``trainbench data fetch mnist`` against a loopback HTTP server that serves files the test generated."""

from __future__ import annotations

import functools
import gzip
import hashlib
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from suite.datasets.fetch import MNIST_FILES
from tests.conftest import trainbench
from tests.mnist.idxfiles import mnist_arrays, write_split
from workloads.mnist_dataheavy.mnist import load_mnist


class _Handler(SimpleHTTPRequestHandler):
    requests: list[str]

    def do_GET(self) -> None:
        type(self).requests.append(self.path)
        super().do_GET()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def mirror(tmp_path: Path) -> Iterator[tuple[str, Path, list[str], dict[str, Any]]]:
    """A loopback HTTP mirror serving the four MNIST .gz files (small, generated): (url, dir, log, arrays)."""
    root = tmp_path / "mirror"
    train = mnist_arrays(30, seed=1)
    test = mnist_arrays(10, seed=2)
    write_split(root, "train", *train, gz=True)
    write_split(root, "t10k", *test, gz=True)
    log: list[str] = []
    handler = type("Handler", (_Handler,), {"requests": log})
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", root, log, {"train": train, "test": test}
    finally:
        server.shutdown()
        server.server_close()


def _sums(root: Path, path: Path, wrong: str | None = None) -> Path:
    lines = []
    for f in MNIST_FILES:
        digest = hashlib.sha256((root / f.name).read_bytes()).hexdigest()
        lines.append(f"{'0' * 64 if f.name == wrong else digest}  {f.name}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_fetch_verifies_unpacks_and_skips_verified_files(
    tmp_path: Path, mirror: tuple[str, Path, list[str], dict[str, Any]]
) -> None:
    url, root, log, data = mirror
    sums = _sums(root, tmp_path / "SHA256SUMS")
    dest = tmp_path / "data"
    args = ("data", "fetch", "mnist", "--dest", str(dest), "--mirror", url, "--checksums", str(sums))
    proc = trainbench(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert sorted(log) == sorted(f"/{f.name}" for f in MNIST_FILES)
    assert proc.stdout.count("verified") == 4
    train = load_mnist(dest, "train")
    np.testing.assert_array_equal(train.images, data["train"][0])
    np.testing.assert_array_equal(load_mnist(dest, "test").labels, data["test"][1])
    assert (dest / "train-images-idx3-ubyte").read_bytes() == gzip.decompress((root / MNIST_FILES[0].name).read_bytes())

    log.clear()
    again = trainbench(*args, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert log == [] and again.stdout.count("already present") == 4


def test_checksum_mismatch_is_refused_and_nothing_is_left(
    tmp_path: Path, mirror: tuple[str, Path, list[str], dict[str, Any]]
) -> None:
    url, root, _, _ = mirror
    sums = _sums(root, tmp_path / "SHA256SUMS", wrong="train-labels-idx1-ubyte.gz")
    dest = tmp_path / "data"
    proc = trainbench(
        "data", "fetch", "mnist", "--dest", str(dest), "--mirror", url, "--checksums", str(sums), cwd=tmp_path
    )
    assert proc.returncode == 1
    assert "train-labels-idx1-ubyte.gz refused: SHA-256" in proc.stderr and "expected 0000" in proc.stderr
    assert not list(dest.glob("train-labels*")), "an unverified file was left behind"


def test_a_file_changed_on_the_mirror_is_refused(
    tmp_path: Path, mirror: tuple[str, Path, list[str], dict[str, Any]]
) -> None:
    url, root, _, _ = mirror
    sums = _sums(root, tmp_path / "SHA256SUMS")
    (root / "t10k-images-idx3-ubyte.gz").write_bytes(gzip.compress(b"\x00\x00\x08\x03" + bytes(12)))
    dest = tmp_path / "data"
    proc = trainbench(
        "data", "fetch", "mnist", "--dest", str(dest), "--mirror", url, "--checksums", str(sums), cwd=tmp_path
    )
    assert proc.returncode == 1 and "t10k-images-idx3-ubyte.gz refused" in proc.stderr
    assert not (dest / "t10k-images-idx3-ubyte.gz").exists() and not (dest / "t10k-images-idx3-ubyte").exists()


def test_published_checksums_are_the_default(
    tmp_path: Path, mirror: tuple[str, Path, list[str], dict[str, Any]]
) -> None:
    """Without --checksums the published MNIST sizes and SHA-256 sums apply, so generated files are refused."""
    url, _, _, _ = mirror
    proc = trainbench("data", "fetch", "mnist", "--dest", str(tmp_path / "d"), "--mirror", url, cwd=tmp_path)
    assert proc.returncode == 1
    assert "refused: size" in proc.stderr and "expected 9912422" in proc.stderr


def test_unreachable_mirror_falls_through_to_the_next(
    tmp_path: Path, mirror: tuple[str, Path, list[str], dict[str, Any]]
) -> None:
    url, root, log, _ = mirror
    sums = _sums(root, tmp_path / "SHA256SUMS")
    dead = url + "missing/"  # 404 for every file
    proc = trainbench(
        "data", "fetch", "mnist", "--dest", str(tmp_path / "d"), "--mirror", dead, "--mirror", url,
        "--checksums", str(sums), cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert sum(p.startswith("/missing/") for p in log) == 4
    only_dead = trainbench(
        "data", "fetch", "mnist", "--dest", str(tmp_path / "e"), "--mirror", dead, "--checksums", str(sums),
        cwd=tmp_path,
    )  # fmt: skip
    assert only_dead.returncode == 1 and "could not download train-images-idx3-ubyte.gz" in only_dead.stderr
    assert "404" in only_dead.stderr


def test_bad_checksum_file_is_bad_input(tmp_path: Path) -> None:
    sums = tmp_path / "SHA256SUMS"
    sums.write_text("not-a-digest  train-images-idx3-ubyte.gz\n")
    proc = trainbench("data", "fetch", "mnist", "--dest", str(tmp_path / "d"), "--checksums", str(sums), cwd=tmp_path)
    assert proc.returncode == 2 and "expected '<sha256 hex>  <file name>'" in proc.stderr
