"""``trainbench data verify``: a JPEG set's files against its ``SHA256SUMS`` and ``manifest.json``.

The manifest is read by the bounded strict JSON reader; ``SHA256SUMS`` is streamed line by line,
each line at most :data:`MAX_SUMS_LINE` bytes and no more lines than the manifest's image count,
so a hostile list cannot make verification read without end. Every listed path must stay inside
the set.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from suite.datasets.image_sets import MANIFEST, SUMS, ImageSetError, VerifyFailed, listing, read_manifest, sha256_file

__all__ = ["VerifyFailed", "VerifyReport", "verify"]

MAX_SUMS_LINE = 4096
"""Longest ``SHA256SUMS`` line read (64 hex digits, two spaces and a path)."""


def _sums_lines(path: Path, max_lines: int) -> Iterator[tuple[str, str]]:
    """(relative path, sha256) of each line of a SHA256SUMS file: regular file only, bounded lines and length.

    Raises:
        ImageSetError: not a regular file, a malformed or overlong line, or more lines than the manifest says.
    """
    if not path.is_file() or path.is_symlink():
        raise ImageSetError(f"{path} is missing or not a regular file")
    with path.open("rb") as f:
        for n, raw in enumerate(iter(lambda: f.readline(MAX_SUMS_LINE + 1), b""), 1):
            if n > max_lines or len(raw) > MAX_SUMS_LINE:
                raise ImageSetError(f"{path}: more lines than the manifest's images, or a line over {MAX_SUMS_LINE} B")
            digest, sep, rel = raw.decode(errors="replace").rstrip("\n").partition("  ")
            if not sep or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
                raise ImageSetError(f"{path}:{n}: expected '<sha256 hex>  <path>'")
            if rel.startswith("/") or ".." in Path(rel).parts:
                raise ImageSetError(f"{path}:{n}: {rel!r} is not a path inside the set")
            yield rel, digest


@dataclass(frozen=True)
class VerifyReport:
    """What ``data verify`` found.

    Attributes:
        checked: images whose SHA-256 matched.
        missing: listed but absent.
        changed: listed, present, with another SHA-256.
        unlisted: images in the class folders that the manifest does not list.
    """

    checked: int
    missing: list[str]
    changed: list[str]
    unlisted: list[str]

    @property
    def ok(self) -> bool:
        """True when every listed image is present and unchanged and none is unlisted."""
        return not (self.missing or self.changed or self.unlisted)


def verify(root: Path, on_progress: Callable[[int], None] | None = None) -> VerifyReport:
    """Check every image of the set at ``root`` against its ``SHA256SUMS`` and ``manifest.json``.

    Args:
        on_progress: called with the number of images checked, every 1,000.

    Raises:
        ImageSetError: no or a bad manifest, a ``SHA256SUMS`` that is not the one the manifest sealed,
            or one with more lines than the manifest's image count.
    """
    root = root.resolve()
    doc = read_manifest(root)
    sums_path = root / SUMS
    if not sums_path.is_file() or sha256_file(sums_path) != doc.get("sha256sums_sha256"):
        raise ImageSetError(f"{sums_path} is missing or is not the list {MANIFEST} sealed; the set was changed")
    listed: set[str] = set()
    missing, changed = [], []
    checked = 0
    for rel, digest in _sums_lines(sums_path, int(doc["summary"]["images"])):
        listed.add(rel)
        path = root / rel
        if not path.is_file():
            missing.append(rel)
        elif sha256_file(path) != digest:
            changed.append(rel)
        else:
            checked += 1
            if on_progress and checked % 1000 == 0:
                on_progress(checked)
    on_disk = {Path(f).relative_to(root).as_posix() for f in listing(root).files}
    return VerifyReport(checked, missing, changed, sorted(on_disk - listed))
