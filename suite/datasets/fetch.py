"""Downloading datasets with checksum verification: ``trainbench data fetch mnist``.

Each file is streamed to a temporary name, its size and SHA-256 are checked against
the published values, and only then is it renamed into place. A file that does not
match is deleted and refused; nothing unverified is ever left under its real name.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import requests

from suite.errors import BadInput, RunFailed
from suite.files import FileProblem, read_config_text
from workloads.mnist_dataheavy.idx import IdxError, read_idx
from workloads.mnist_dataheavy.mnist import IMAGE_MAGIC, LABEL_MAGIC

CHUNK_BYTES = 1 << 16
DEFAULT_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class RemoteFile:
    """A file to download and the checksum it must have.

    Attributes:
        name: file name on the mirror and on disk.
        sha256: hex SHA-256 of the file as served.
        size: bytes, or None when unknown.
        magic: IDX magic number of the decompressed content, or None.
    """

    name: str
    sha256: str
    size: int | None = None
    magic: int | None = None


MNIST_MIRRORS: tuple[str, ...] = (
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "https://storage.googleapis.com/cvdf-datasets/mnist/",
)
"""The mirror torchvision downloads from (torchvision 0.29.1, torchvision/datasets/mnist.py),
then the one TensorFlow's MNIST loaders use. yann.lecun.com no longer serves the files reliably."""

MNIST_FILES: tuple[RemoteFile, ...] = (
    RemoteFile(
        "train-images-idx3-ubyte.gz",
        "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
        9_912_422,
        IMAGE_MAGIC,
    ),
    RemoteFile(
        "train-labels-idx1-ubyte.gz",
        "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
        28_881,
        LABEL_MAGIC,
    ),
    RemoteFile(
        "t10k-images-idx3-ubyte.gz",
        "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
        1_648_877,
        IMAGE_MAGIC,
    ),
    RemoteFile(
        "t10k-labels-idx1-ubyte.gz",
        "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
        4_542,
        LABEL_MAGIC,
    ),
)
"""The four MNIST archives. Sizes: the MNIST page (Y. LeCun, C. Cortes, C. Burges,
http://yann.lecun.com/exdb/mnist/). SHA-256: as published with the torchvision port
for Ruby (ankane/torchvision-ruby, lib/torchvision/datasets/mnist.rb) and in
TensorFlow-era loaders alike; they agree with the MD5 sums torchvision 0.29.1 lists
(f68b3c2d..., d53e105e..., 9fb629c4..., ec29112d...)."""

DATASETS: dict[str, tuple[tuple[str, ...], tuple[RemoteFile, ...]]] = {"mnist": (MNIST_MIRRORS, MNIST_FILES)}
"""Dataset name -> (mirrors, files)."""


class FetchError(RunFailed, RuntimeError):
    """A download that failed or did not verify; the message names the file, URL and reason (exit 1)."""


class ChecksumFileError(FetchError):
    """A ``--checksums`` file that cannot be used (bad input, nothing was downloaded: exit 2)."""

    exit_code = BadInput.exit_code


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(CHUNK_BYTES), b""):
            h.update(chunk)
    return h.hexdigest()


def read_checksums(path: Path, files: Sequence[RemoteFile]) -> tuple[RemoteFile, ...]:
    """Replace the published checksums by those in a ``sha256sum`` file (``<hex>  <name>`` lines).

    Every file of the dataset must be listed; sizes are then not checked (only the digest).

    Raises:
        ChecksumFileError: unreadable or oversized (:mod:`suite.files`), a malformed line, or a
            file missing from the list.
    """
    try:
        text = read_config_text(path)
    except FileProblem as exc:
        raise ChecksumFileError(f"cannot read checksum file {path}: {exc.message}") from exc
    sums: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 2 or len(parts[0]) != 64 or any(c not in "0123456789abcdef" for c in parts[0].lower()):
            raise ChecksumFileError(f"{path}:{n}: expected '<sha256 hex>  <file name>', got {line!r}")
        sums[parts[1].lstrip("*")] = parts[0].lower()
    missing = [f.name for f in files if f.name not in sums]
    if missing:
        raise ChecksumFileError(f"{path} lists no checksum for {', '.join(missing)}")
    return tuple(RemoteFile(f.name, sums[f.name], None, f.magic) for f in files)


def _download(session: requests.Session, url: str, dest: Path, timeout_s: float) -> None:
    tmp = dest.with_name(dest.name + ".part")
    try:
        with session.get(url, stream=True, timeout=timeout_s) as r:
            r.raise_for_status()
            with tmp.open("wb") as f:
                for chunk in r.iter_content(CHUNK_BYTES):
                    f.write(chunk)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)


def _verify(path: Path, spec: RemoteFile) -> str | None:
    """None when ``path`` matches ``spec``, else why not."""
    size = path.stat().st_size
    if spec.size is not None and size != spec.size:
        return f"size {size} bytes, expected {spec.size}"
    digest = sha256_of(path)
    if digest != spec.sha256:
        return f"SHA-256 {digest}, expected {spec.sha256}"
    return None


def _unpack(archive: Path, spec: RemoteFile) -> Path:
    """Decompress ``x.gz`` to ``x`` and check it parses as IDX with the right magic number."""
    out = archive.with_suffix("")
    try:
        read_idx(archive, spec.magic)
    except IdxError as exc:
        raise FetchError(f"{archive} matches its checksum but is not a valid IDX file: {exc}") from exc
    tmp = out.with_name(out.name + ".part")
    with gzip.open(archive, "rb") as src, tmp.open("wb") as dst:
        shutil.copyfileobj(src, dst, CHUNK_BYTES)
    os.replace(tmp, out)
    return out


def fetch(
    name: str,
    dest: Path,
    *,
    mirrors: Sequence[str] | None = None,
    checksums: Path | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    on_file: Callable[[str, str], None] | None = None,
) -> list[Path]:
    """Download dataset ``name`` into ``dest``, verify every file, and unpack ``.gz`` archives.

    Files already present with the right checksum are not downloaded again. Mirrors
    are tried in order when a download fails (connection error, HTTP error); a file
    whose checksum does not match is refused at once and deleted.

    Args:
        name: a key of :data:`DATASETS` (``mnist``).
        dest: directory to write into (created).
        mirrors: base URLs to use instead of the published mirrors.
        checksums: a ``sha256sum``-format file to verify against instead of the published sums.
        timeout_s: per-request connect/read timeout, seconds.
        on_file: called with (file name, "cached" | URL) for each verified file.

    Returns:
        The unpacked files (e.g. ``train-images-idx3-ubyte``).

    Raises:
        ChecksumFileError: the ``checksums`` file is unusable.
        FetchError: unknown dataset, every mirror failed for a file, or a checksum mismatch.
    """
    if name not in DATASETS:
        raise FetchError(f"unknown dataset {name!r}; known: {', '.join(sorted(DATASETS))}")
    default_mirrors, files = DATASETS[name]
    specs = read_checksums(checksums, files) if checksums else files
    bases = [m if m.endswith("/") else m + "/" for m in (mirrors or default_mirrors)]
    dest.mkdir(parents=True, exist_ok=True)
    out: list[Path] = []
    with requests.Session() as session:
        for spec in specs:
            path = dest / spec.name
            origin = "cached"
            if not (path.exists() and _verify(path, spec) is None):
                errors: list[str] = []
                for base in bases:
                    url = base + spec.name
                    try:
                        _download(session, url, path, timeout_s)
                    except requests.RequestException as exc:
                        errors.append(f"{url}: {exc}")
                        continue
                    why = _verify(path, spec)
                    if why is not None:
                        path.unlink()
                        raise FetchError(f"{url} refused: {why}; the file was deleted")
                    origin = url
                    break
                else:
                    raise FetchError(f"could not download {spec.name}: " + "; ".join(errors))
            out.append(_unpack(path, spec) if path.suffix == ".gz" else path)
            if on_file is not None:
                on_file(spec.name, origin)
    return out
