"""JPEG sets a user can make or bring: ``trainbench data make-imagenet-like``, ``data manifest``, ``data verify``.

A generated set is laid out as ImageNet's ``train/`` is: ``DIR/<class>/<class>_<n>.JPEG``, one
folder per class, so every input pipeline reads it with the same reader that reads a real
ImageNet tree (:mod:`workloads.image_files`). Each image's pixels come from a generator seeded
with (seed, class, index) (:mod:`suite.datasets.photos`), so the same seed gives the same bytes
whatever the number of processes that write them.

Beside the images: ``SHA256SUMS`` (``sha256sum -c SHA256SUMS`` checks it too) and
``manifest.json`` (how the set was made, counts, mean size, and the SHA-256 of ``SHA256SUMS``).
The manifest is written last: a set whose writing was interrupted has none, and verifying
it says so. ``data manifest`` writes the same two files for a tree a user brings (ImageNet).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from suite.datasets.photos import DEFAULT_TEXTURE, class_palette, image_size, photo
from suite.errors import BadInput, RunFailed
from suite.files import FileProblem, read_json
from workloads.image_files import DataError, ImageList, list_images

MANIFEST = "manifest.json"
SUMS = "SHA256SUMS"
FORMAT = "trainbench-image-set"
FORMAT_VERSION = 1
MAX_IMAGES = 10_000_000
"""Most images a manifest may list (ImageNet-21k has about 14 million; ILSVRC-2012 train 1.28 million)."""


class ImageSetError(BadInput):
    """A set that cannot be made, listed or verified as asked (exit 2): the message says why and the fix."""


class VerifyFailed(RunFailed):
    """Files of a set differ from its manifest (exit 1): missing, changed or unlisted."""


@dataclass(frozen=True)
class MakeSettings:
    """What ``make-imagenet-like`` writes.

    Attributes:
        classes: class folders (ImageNet: 1,000).
        images_per_class: images in each (ImageNet train: about 1,300).
        seed: fixes every pixel, size and byte.
        long_side: the long side of full-size images, px (ImageNet: mostly 500).
        quality: JPEG quality (ImageNet's files were mostly saved at about 90-96).
        texture: texture amplitude (:data:`suite.datasets.photos.DEFAULT_TEXTURE`), which sets the file size.
    """

    classes: int = 10
    images_per_class: int = 100
    seed: int = 0
    long_side: int = 500
    quality: int = 90
    texture: float = DEFAULT_TEXTURE

    def class_name(self, index: int) -> str:
        """Folder name of class ``index`` (ImageNet's are WordNet ids such as n01440764)."""
        return f"c{index:04d}"


@dataclass(frozen=True)
class SetSummary:
    """What a set holds: counts, bytes and mean image size (what ``manifest.json`` records)."""

    classes: int
    images: int
    total_bytes: int
    mean_bytes: float
    mean_width: float | None
    mean_height: float | None


def _write_class(settings: MakeSettings, root: Path, index: int) -> list[tuple[str, str, int, int, int]]:
    """Write class ``index``'s images; returns (relative path, sha256, bytes, width, height) of each."""
    name = settings.class_name(index)
    folder = root / name
    folder.mkdir()
    palette = class_palette(np.random.default_rng([settings.seed, index]))
    out = []
    for n in range(settings.images_per_class):
        rng = np.random.default_rng([settings.seed, index, n])
        width, height = image_size(rng, settings.long_side)
        buf = io.BytesIO()
        photo(rng, width, height, palette, settings.texture).save(buf, "JPEG", quality=settings.quality)
        data = buf.getvalue()
        rel = f"{name}/{name}_{n:05d}.JPEG"
        (root / rel).write_bytes(data)
        out.append((rel, hashlib.sha256(data).hexdigest(), len(data), width, height))
    return out


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _seal(root: Path, rows: list[tuple[str, str, int]], info: dict[str, Any], summary: SetSummary) -> Path:
    """Write SHA256SUMS, then manifest.json (last, atomically); returns the manifest's path."""
    sums = "".join(f"{digest}  {rel}\n" for rel, digest, _ in sorted(rows)).encode()
    (root / SUMS).write_bytes(sums)
    doc = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        **info,
        "summary": asdict(summary),
        "sha256sums_sha256": hashlib.sha256(sums).hexdigest(),
    }
    tmp = root / f".{MANIFEST}.tmp"
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    os.replace(tmp, root / MANIFEST)
    return root / MANIFEST


def make_imagenet_like(
    root: Path, settings: MakeSettings, jobs: int = 1, on_class: Callable[[int], None] | None = None
) -> SetSummary:
    """Write a generated ImageNet-like JPEG set into the new or empty directory ``root``.

    Args:
        jobs: processes writing classes in parallel (the bytes do not depend on it).
        on_class: called with the number of classes written so far.

    Raises:
        ImageSetError: ``root`` exists and is not an empty directory, or a setting is out of range.
    """
    if settings.classes < 1 or settings.images_per_class < 1 or not 1 <= settings.quality <= 100:
        raise ImageSetError("--classes and --images-per-class must be >= 1 and --quality within 1-100")
    if settings.classes * settings.images_per_class > MAX_IMAGES:
        raise ImageSetError(f"at most {MAX_IMAGES:,} images per set; lower --classes or --images-per-class")
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise ImageSetError(f"{root} exists and is not an empty directory; choose a new directory")
    root.mkdir(parents=True, exist_ok=True)
    rows: list[tuple[str, str, int, int, int]] = []
    if jobs <= 1:
        for i in range(settings.classes):
            rows.extend(_write_class(settings, root, i))
            if on_class:
                on_class(i + 1)
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(_write_class, settings, root, i) for i in range(settings.classes)]
            for i, future in enumerate(futures):
                rows.extend(future.result())
                if on_class:
                    on_class(i + 1)
    total = sum(r[2] for r in rows)
    summary = SetSummary(
        classes=settings.classes,
        images=len(rows),
        total_bytes=total,
        mean_bytes=total / len(rows),
        mean_width=float(np.mean([r[3] for r in rows])),
        mean_height=float(np.mean([r[4] for r in rows])),
    )
    import PIL

    versions = {"pillow": PIL.__version__, "numpy": np.__version__}  # the same seed gives the same bytes with these
    info = {"kind": "generated", "generator": {"name": "make-imagenet-like", **asdict(settings), **versions}}
    _seal(root, [(rel, digest, size) for rel, digest, size, _, _ in rows], info, summary)
    return summary


def listing(root: Path) -> ImageList:
    """The tree's images (:func:`workloads.image_files.list_images`); a bad layout is an :class:`ImageSetError`."""
    try:
        return list_images(root)
    except DataError as exc:
        raise ImageSetError(str(exc)) from exc


def write_manifest(root: Path) -> SetSummary:
    """Write ``SHA256SUMS`` and ``manifest.json`` for a class-folder tree a user brings (e.g. ImageNet's train/).

    Reads every image once (about the disk's read speed). Existing manifest files are replaced.

    Raises:
        ImageSetError: the tree is not a class-folder tree of images (:func:`workloads.image_files.list_images`).
    """
    images = listing(root)
    rows = []
    for path in images.files:
        p = Path(path)
        rows.append((p.relative_to(images.root).as_posix(), sha256_file(p), p.stat().st_size))
    total = sum(r[2] for r in rows)
    summary = SetSummary(len(images.classes), len(rows), total, total / len(rows), None, None)
    _seal(images.root, rows, {"kind": "brought"}, summary)
    return summary


def read_manifest(root: Path) -> dict[str, Any]:
    """The set's ``manifest.json``, checked for its format (bounded strict JSON, :mod:`suite.files`).

    Raises:
        ImageSetError: missing (e.g. the set's writing was interrupted), unreadable, or another format.
    """
    path = root / MANIFEST
    if not path.exists():
        raise ImageSetError(
            f"{path} is missing: the set was not finished, or was never sealed; make it again, or "
            f"`trainbench data manifest {root}` for a tree you brought"
        )
    try:
        doc = read_json(path)
    except FileProblem as exc:
        raise ImageSetError(f"{path}: {exc.message}; {exc.fix}") from exc
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("format_version") != FORMAT_VERSION:
        raise ImageSetError(f"{path} is not a {FORMAT} manifest of version {FORMAT_VERSION}")
    images = (doc.get("summary") or {}).get("images")
    if not isinstance(images, int) or not 0 < images <= MAX_IMAGES:
        raise ImageSetError(f"{path}: summary.images must be an integer within 1-{MAX_IMAGES:,}")
    return doc
