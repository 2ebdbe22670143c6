"""The one bounded reader of every untrusted file: results, system descriptions, bands, specs,
price tables, rules, outbox entries and checksum lists.

A file is opened only when it is a regular file (never a FIFO or a device, which could
block), without following a final link, non-blocking, and never read past
:data:`MAX_FILE_BYTES`. Nothing read here is executed, evaluated or unpickled. JSON is
parsed with the standard library's parser, made strict: NaN and Infinity (which Python
accepts but JSON does not), duplicate keys and absurd nesting are refused.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

MAX_FILE_BYTES = 16 * 1024 * 1024
"""The one size limit of every file trainbench reads from outside its own run, bytes (16 MiB).

The largest legitimate file is a result: about 190 bytes per step record and about 6 bytes
per core per utilization sample (indented JSON as ``write_result`` writes it). An official
run of a few hundred steps is well under 1 MB; 16 MiB still holds some 80,000 steps, or an
hour of 0.5 s sampling on a 192-core host. Parsing 16 MiB of JSON takes about 10x that in
memory, so a hostile file cannot push one reader past a few hundred MB. Specs, price tables,
rules, bands and system descriptions are a few KiB and need no tighter cap of their own:
the work done on them is bounded by the same size.
"""
MAX_FILES = 20_000
"""Most files the validator looks at in one tree."""
MAX_JSON_DEPTH = 64
"""Deepest JSON nesting accepted (a result nests about 6 levels)."""


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


def read_bounded(path: Path) -> bytes:
    """Read a regular file of at most :data:`MAX_FILE_BYTES`, without following a final symlink.

    The type and size are checked with ``lstat`` before opening (so a FIFO never
    blocks the validator) and again on the open descriptor; at most the limit + 1
    bytes are ever read, so a file that grows meanwhile is still refused.

    Raises:
        FileProblem: codes ``symlink``, ``not-regular-file``, ``oversized``, ``unreadable``.
    """
    try:
        st = path.lstat()
    except OSError as exc:
        raise FileProblem("unreadable", f"cannot stat the file: {exc.strerror}", "check the file exists") from exc
    if stat.S_ISLNK(st.st_mode):
        raise FileProblem("symlink", "symbolic link; not followed", "replace the link with a regular file")
    if not stat.S_ISREG(st.st_mode):
        raise FileProblem("not-regular-file", "not a regular file", "remove it; only regular files belong here")
    limit = MAX_FILE_BYTES
    if st.st_size > limit:
        raise FileProblem(
            "oversized",
            f"{st.st_size:,} bytes is over the {limit:,}-byte limit for a file trainbench reads",
            "submit the file as the suite wrote it; a valid file of this kind is far smaller",
        )
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise FileProblem("unreadable", f"cannot open the file: {exc.strerror}", "make it readable") from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FileProblem("not-regular-file", "not a regular file", "remove it")
        chunks: list[bytes] = []
        left = limit + 1
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
    if len(data) > limit:
        raise FileProblem("oversized", f"more than {limit:,} bytes (it grew while being read)", "submit it unchanged")
    return data


def _reject_constant(name: str) -> Any:
    raise FileProblem(
        "non-finite-number",
        f"the number {name} is not JSON and never a valid measurement",
        "re-run: a result with NaN or Infinity is broken; trainbench never writes one",
    )


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise FileProblem(
                "duplicate-key",
                f"the key {key!r} appears twice in one object",
                "remove the repeated key; parsers disagree on which value wins",
            )
        out[key] = value
    return out


def _depth(value: Any) -> int:
    depth, frontier = 0, [value]
    while frontier:
        depth += 1
        if depth > MAX_JSON_DEPTH:
            return depth
        nxt: list[Any] = []
        for v in frontier:
            if isinstance(v, dict):
                nxt.extend(v.values())
            elif isinstance(v, list):
                nxt.extend(v)
        frontier = nxt
    return depth


def parse_json(data: bytes) -> Any:
    """Strict JSON: UTF-8, no NaN/Infinity, no duplicate keys, at most MAX_JSON_DEPTH levels.

    Raises:
        FileProblem: codes ``not-json``, ``non-finite-number``, ``duplicate-key``, ``too-deep``.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileProblem(
            "not-json", f"not UTF-8 text ({exc.reason} at byte {exc.start})", "submit the file as written"
        ) from exc
    try:
        value = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as exc:
        raise FileProblem(
            "not-json",
            f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
            "submit the file exactly as trainbench wrote it (it may have been truncated or hand-edited)",
        ) from exc
    except RecursionError as exc:
        raise FileProblem(
            "too-deep", "JSON nested too deeply to parse", "submit the file as trainbench wrote it"
        ) from exc
    if _depth(value) > MAX_JSON_DEPTH:
        raise FileProblem("too-deep", f"JSON nested deeper than {MAX_JSON_DEPTH} levels", "submit the file as written")
    return value


def read_json(path: Path) -> Any:
    """:func:`read_bounded` then :func:`parse_json`.

    Raises:
        FileProblem: any of the codes of those two functions.
    """
    return parse_json(read_bounded(path))


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
        fix = "pass the intended config file (specs and price tables are a few KiB of YAML)"
        raise FileProblem(exc.code, exc.message, fix) from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileProblem("not-utf8", f"not UTF-8 text: {exc}", "save the file as UTF-8") from exc
