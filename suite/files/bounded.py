"""Reading an untrusted file: regular files only, non-blocking, one link, one size cap (see :mod:`suite.files`)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

MAX_FILE_BYTES = 16 * 1024 * 1024
"""The one size limit of every file trainbench reads from outside its own run, bytes (16 MiB).

The largest legitimate file is a result: about 190 bytes per step record (indented JSON
as ``write_result`` writes it). An official run of a few hundred steps is well under 1 MB;
16 MiB still holds some 80,000 steps. Parsing 16 MiB of JSON takes about 10x that in
memory, so a hostile file cannot push one reader past a few hundred MB.
"""
MAX_FILES = 20_000
"""Most files the validator looks at in one tree."""
MAX_DEPTH = 64
"""Deepest JSON or YAML nesting accepted (a result nests about 6 levels, a bands file 5)."""
MAX_JSON_DEPTH = MAX_DEPTH
"""Alias of :data:`MAX_DEPTH` (older name)."""
MAX_INT_DIGITS = 32
"""Most digits of an integer literal (the largest legitimate one, a byte count, has 15)."""
MAX_FLOAT_CHARS = 64
"""Longest number literal with a fraction or exponent (``repr`` of a float has at most 24)."""


class FileProblem(Exception):
    """A file that cannot be taken as input.

    Attributes:
        code: the finding code (see :data:`suite.validation.findings.CODES`); the
            validator turns the problem into a finding of that code, other readers into
            their own error carrying ``message`` and ``fix``.
        message: what is wrong.
        fix: how to fix it.
    """

    def __init__(self, code: str, message: str, fix: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.fix = fix


def link_problem(path: Path, root: Path) -> FileProblem | None:
    """A problem when ``path`` is a symbolic link, else None. The link is never followed.

    Args:
        path: an entry of the tree (not resolved).
        root: the tree's root, resolved.
    """
    if not path.is_symlink():
        return None
    target = os.readlink(path)
    resolved = (path.parent / target).resolve()
    if not resolved.is_relative_to(root):
        return FileProblem(
            "symlink-outside-tree",
            f"symbolic link to {target!r}, outside the validated tree; it was not followed",
            "replace the link with the file itself (results must be regular files inside the submission)",
        )
    return FileProblem(
        "symlink",
        f"symbolic link to {target!r}; the validator does not follow links",
        "replace the link with a regular file (a copy of a result is also a duplicate run)",
    )


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a directory"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file"


def _check_stat(st: os.stat_result) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise FileProblem("symlink", "symbolic link; not followed", "replace the link with a regular file")
    if not stat.S_ISREG(st.st_mode):
        raise FileProblem(
            "not-regular-file", f"{_kind(st.st_mode)}, not a regular file", "replace it with the file it stands for"
        )
    if st.st_nlink > 1:
        raise FileProblem(
            "hard-link",
            f"the file has {st.st_nlink} hard links: the same file also lives elsewhere, maybe outside this tree",
            "replace it with a copy of its own (cp, not ln)",
        )
    if st.st_size > MAX_FILE_BYTES:
        raise FileProblem(
            "oversized",
            f"{st.st_size:,} bytes is over the {MAX_FILE_BYTES:,}-byte limit for a file trainbench reads",
            "submit the file as the suite wrote it; a valid file of this kind is far smaller",
        )


def read_bounded(path: Path) -> bytes:
    """Read a regular file of at most :data:`MAX_FILE_BYTES`, without following a final symlink.

    The type, link count and size are checked with ``lstat`` before opening (so a FIFO
    never blocks) and again on the descriptor, which is opened ``O_NONBLOCK | O_NOFOLLOW``;
    at most the limit + 1 bytes are ever read, so a file that grows meanwhile is refused.

    Raises:
        FileProblem: codes ``symlink``, ``not-regular-file``, ``hard-link``, ``oversized``,
            ``unreadable``.
    """
    try:
        _check_stat(path.lstat())
    except OSError as exc:
        raise FileProblem("unreadable", f"cannot stat the file: {exc.strerror}", "check the file exists") from exc
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise FileProblem("unreadable", f"cannot open the file: {exc.strerror}", "make it readable") from exc
    try:
        _check_stat(os.fstat(fd))
        chunks: list[bytes] = []
        left = MAX_FILE_BYTES + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise FileProblem("unreadable", f"cannot read the file: {exc.strerror}", "make it readable") from exc
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > MAX_FILE_BYTES:
        raise FileProblem("oversized", f"over {MAX_FILE_BYTES:,} bytes (it grew while read)", "submit it unchanged")
    return data


def read_config_text(path: Path) -> str:
    """A config file (spec, price table, rules, bands) as UTF-8 text, at most :data:`MAX_FILE_BYTES`.

    Unlike submission files, a config may be reached through a symbolic link (it is
    resolved first); the target must still be a regular file within :data:`MAX_FILE_BYTES`.

    Raises:
        FileProblem: unreadable, not a regular file, oversized, or not UTF-8 (code ``not-utf8``).
    """
    try:
        data = read_bounded(path.resolve())
    except FileProblem as exc:
        raise FileProblem(exc.code, exc.message, f"{exc.fix} (pass the intended config file)") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileProblem("not-utf8", f"not UTF-8 text: {exc}", "save the file as UTF-8") from exc
