"""Listing an ImageFolder tree for tf.data (no TensorFlow needed, so it is testable anywhere)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".gif")
"""File types ``tf.io.decode_image`` decodes (ImageFolder's other types, e.g. .webp or .tiff, are skipped)."""


class DataError(ValueError):
    """A data source that cannot feed the run (missing, empty, too small for a batch)."""


@dataclass(frozen=True)
class ImageList:
    """The files of an ImageFolder tree.

    Attributes:
        paths: absolute file paths, sorted by class, then file name.
        labels: class index of each path (index into ``classes``).
        classes: class names (the sub-directory names, sorted), as torchvision's ImageFolder orders them.
    """

    paths: tuple[str, ...]
    labels: tuple[int, ...]
    classes: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.paths)

    def shard_size(self, rank: int, world_size: int) -> int:
        """Files rank ``rank`` of ``world_size`` reads (``tf.data.Dataset.shard``: every world_size-th file)."""
        return len(range(rank, len(self.paths), world_size))


def list_imagefolder(root: str | Path) -> ImageList:
    """The image files under ``root/<class>/`` (one sub-directory per class, any depth below it).

    Raises:
        DataError: ``root`` is not a directory, has no class directories, or holds no image files.
    """
    path = Path(root)
    if not path.is_dir():
        raise DataError(f"data_dir {str(path)!r} is not a directory; point data_dir at an ImageFolder tree")
    classes = sorted(d.name for d in path.iterdir() if d.is_dir() and not d.name.startswith("."))
    if not classes:
        raise DataError(f"data_dir {str(path)!r} has no class sub-directories (expected data_dir/<class>/<image>)")
    paths: list[str] = []
    labels: list[int] = []
    for index, name in enumerate(classes):
        files = sorted(f for f in (path / name).rglob("*") if f.is_file() and f.suffix.lower() in IMAGE_EXTENSIONS)
        paths += [str(f.resolve()) for f in files]
        labels += [index] * len(files)
    if not paths:
        raise DataError(
            f"data_dir {str(path)!r} holds no image files ({', '.join(IMAGE_EXTENSIONS)}) in its class directories"
        )
    return ImageList(tuple(paths), tuple(labels), tuple(classes))
