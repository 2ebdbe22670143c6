"""The images' lock files: every Python package pinned with its sha256 hashes.

The images install them with ``uv pip install --require-hashes --no-deps`` (uv itself pinned
in ``containers/tools.lock`` and installed by ``pip --require-hashes``), so a build gets
exactly the locked files or fails. They are generated for the images'
platform (Linux x86_64, CPython 3.11) with ``uv pip compile --generate-hashes``
against PyPI, whatever the platform of the developer who runs ``make lock``.

Each lock records the sha256 of its inputs in its header (``# inputs-sha256:``).
A build refuses a lock whose inputs changed since it was generated (e.g. a new
dependency in ``pyproject.toml``) instead of silently building something else.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from suite.containers.requirements import (
    DEFAULT_INDEX_URL,
    INPUTS_MARKER,
    LOCK_PLATFORM,
    LOCK_PYTHON,
    LOCKS,
    TF_IMAGE_DEPENDENCIES,
    LockDef,
    LockError,
)

__all__ = [
    "LOCKS",
    "LOCK_PYTHON",
    "TF_IMAGE_DEPENDENCIES",
    "LockDef",
    "LockError",
    "check_lock",
    "compile_lock",
    "file_sha256",
    "find_uv",
    "inputs_sha256",
    "locked_packages",
    "recorded_inputs",
]


def inputs_sha256(lock: LockDef, root: Path) -> str:
    """sha256 of what the lock was resolved from: its requirement lines, the platform
    and, for a constrained lock, the constraint lock's content.

    Raises:
        LockError: an input file cannot be read.
    """
    h = hashlib.sha256()
    h.update(f"python={LOCK_PYTHON} platform={LOCK_PLATFORM}\n".encode())
    for line in lock.inputs(root):
        h.update(line.encode() + b"\n")
    if lock.constraint is not None:
        h.update(b"constraint:" + file_sha256(root / lock.constraint).encode())
    return h.hexdigest()


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes.

    Raises:
        LockError: the file cannot be read.
    """
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise LockError(f"cannot read {path}: {exc}") from exc


def recorded_inputs(path: Path) -> str | None:
    """The ``inputs-sha256`` a lock file records in its header, or None."""
    try:
        for line in path.read_text().splitlines():
            if line.startswith(INPUTS_MARKER):
                return line[len(INPUTS_MARKER) :].strip()
            if line and not line.startswith("#"):
                break
    except OSError:
        return None
    return None


def check_lock(lock: LockDef, root: Path) -> None:
    """Refuse a lock that is missing or whose inputs changed since it was generated.

    Raises:
        LockError: the message names the lock and says to run ``make lock``.
    """
    path = root / lock.path
    if not path.exists():
        raise LockError(f"lock file {path} is missing; generate it with `make lock` (trainbench images lock)")
    if recorded_inputs(path) != inputs_sha256(lock, root):
        raise LockError(
            f"lock file {lock.path} is stale: its inputs ({lock.description}) changed since it was generated. "
            "Regenerate it with `make lock` (trainbench images lock) and commit it with the change"
        )


def locked_packages(path: Path) -> dict[str, str]:
    """``name -> version`` of every pinned package in a lock file (names normalized).

    Raises:
        LockError: the file cannot be read.
    """
    try:
        text = path.read_text()
    except OSError as exc:
        raise LockError(f"cannot read {path}: {exc}") from exc
    out: dict[str, str] = {}
    for m in re.finditer(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;\\]+)", text, re.M):
        out[re.sub(r"[-_.]+", "-", m.group(1)).lower()] = m.group(2)
    return out


def find_uv() -> str:
    """Path of ``uv`` (beside this interpreter, or on PATH).

    Raises:
        LockError: uv is not installed.
    """
    beside = Path(sys.executable).parent / "uv"
    if beside.exists():
        return str(beside)
    found = shutil.which("uv")
    if found is None:
        raise LockError("generating lock files needs uv: pip install uv (it is in trainbench's dev extras)")
    return found


def compile_lock(lock: LockDef, root: Path, index_url: str = DEFAULT_INDEX_URL, uv: str | None = None) -> Path:
    """Resolve ``lock``'s inputs with uv for Linux x86_64 / CPython 3.11 and write the lock.

    Returns:
        The path of the lock file written.

    Raises:
        LockError: uv is missing or the resolution failed (uv's message is included).
    """
    exe = uv or find_uv()
    requirements = lock.inputs(root)
    digest = inputs_sha256(lock, root)
    with tempfile.TemporaryDirectory(prefix="trainbench-lock-") as tmp:
        src = Path(tmp) / "requirements.in"
        src.write_text("\n".join(requirements) + "\n")
        out = Path(tmp) / "requirements.lock"
        cmd = [
            exe,
            "pip",
            "compile",
            "--no-config",
            "--quiet",
            "--no-header",
            "--generate-hashes",
            "--index-url",
            index_url,
            "--python-version",
            LOCK_PYTHON,
            "--python-platform",
            LOCK_PLATFORM,
            str(src),
            "-o",
            str(out),
        ]
        if lock.constraint is not None:
            cmd += ["--constraint", str(root / lock.constraint)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        if proc.returncode != 0:
            raise LockError(f"uv could not resolve {lock.path}:\n{proc.stderr.strip()[-3000:]}")
        body = out.read_text().replace(str(src), "requirements.in")
    header = (
        f"# Lock file of trainbench's images: {lock.description}.\n"
        f"# Platform: {LOCK_PLATFORM}, CPython {LOCK_PYTHON}; installed with --require-hashes --no-deps "
        "(by uv or pip: see the Dockerfiles).\n"
        "# Generated by `make lock` (trainbench images lock: uv pip compile --generate-hashes); do not edit.\n"
        f"{INPUTS_MARKER}{digest}\n"
    )
    path = root / lock.path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(header + body)
    return path
