"""The one reader of an image tree laid out as class folders: ImageNet's ``train/`` and ``val/``,
an ImageFolder tree, and the sets ``trainbench data make-imagenet-like`` writes.

The layout is torchvision's ImageFolder and ImageNet's own: ``ROOT/<class>/<image>``, one
folder per class (ImageNet names them by WordNet id, ``n01440764``), the class index being
the folder's position in sorted order. File extensions are matched without regard to case
(ImageNet's files end in ``.JPEG``). Every input pipeline of the GPU workload (DataLoader,
DALI, tf.data service) takes its files and labels from :func:`list_images`, so all of them
see the same samples with the same labels.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png")
"""Extensions of the files read (lower case; matched case-insensitively). ImageNet's train split
holds one PNG and a few CMYK JPEGs under ``.JPEG`` names; every pipeline decodes them as RGB."""

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
"""ImageNet channel statistics (RGB, on pixels scaled to 0-1) used by torchvision's reference training recipes."""

VAL_SPLIT_DIR = "val"
"""A ``val/`` folder of class folders inside a training root is an evaluation split, never a class."""


class DataError(ValueError):
    """A data source that cannot feed the run (missing, empty, too small, wrongly laid out)."""


@dataclass(frozen=True)
class ImageList:
    """The samples of a class-folder tree.

    Attributes:
        root: the tree's root (absolute).
        classes: class folder names, sorted; label i is ``classes[i]``.
        files: absolute paths of the images, sorted by class then file name.
        labels: the class index of each file (same length as ``files``).
    """

    root: Path
    classes: tuple[str, ...]
    files: tuple[str, ...]
    labels: tuple[int, ...]

    def __len__(self) -> int:
        return len(self.files)


def is_image(name: str) -> bool:
    """True when ``name`` ends in one of :data:`IMAGE_EXTENSIONS`, in any case."""
    return name.lower().endswith(IMAGE_EXTENSIONS)


def val_split_dir(root: str | Path) -> Path | None:
    """``root/val`` when it is an evaluation split (a directory holding class folders), else None.

    A ``val`` folder that holds images directly is an ordinary class, as ImageFolder sees it.
    """
    val = Path(root) / VAL_SPLIT_DIR
    if val.is_dir() and any(p.is_dir() for p in val.iterdir()):
        return val
    return None


def _images_in(folder: Path) -> list[str]:
    with os.scandir(folder) as it:
        return sorted(e.name for e in it if is_image(e.name) and e.is_file())


def list_images(root: str | Path) -> ImageList:
    """The images of the class-folder tree at ``root`` and their labels.

    The classes are the sub-directories of ``root`` in sorted order, except a ``val/``
    evaluation split (:func:`val_split_dir`). Files with other extensions (a manifest,
    ``SHA256SUMS``) are ignored. Work is one directory scan per class.

    Raises:
        DataError: ``root`` is not a directory; it holds images but no class folders (ImageNet's
            ``val/`` as shipped, before sorting into class folders); its folders hold folders
            rather than images (the dataset's root instead of ``train/``); or it holds no image.
    """
    path = Path(root).resolve()
    if not path.is_dir():
        raise DataError(f"data_dir {str(root)!r} is not a directory; point data_dir at a tree of class folders")
    split = val_split_dir(path)
    classes = sorted(d.name for d in path.iterdir() if d.is_dir() and (split is None or d != split))
    if not classes:
        flat = len(_images_in(path))
        hint = (
            f" but {flat} images directly in it: ImageNet's val/ ships flat; sort it into one folder per "
            "class (its synset id) first"
            if flat
            else ""
        )
        raise DataError(f"data_dir {str(root)!r} holds no class folders{hint}; the layout is DIR/<class>/<image>")
    files: list[str] = []
    labels: list[int] = []
    for index, name in enumerate(classes):
        names = _images_in(path / name)
        files.extend(str(path / name / f) for f in names)
        labels.extend([index] * len(names))
    if not files:
        nested = [c for c in classes if any(p.is_dir() for p in (path / c).iterdir())]
        hint = (
            f"; its folders {', '.join(nested[:3])} hold folders: point data_dir at the split (e.g. train/)"
            if nested
            else ""
        )
        raise DataError(
            f"data_dir {str(root)!r} holds no images ({', '.join(IMAGE_EXTENSIONS)}) in its {len(classes)} "
            f"class folder(s){hint}"
        )
    return ImageList(path, tuple(classes), tuple(files), tuple(labels))
