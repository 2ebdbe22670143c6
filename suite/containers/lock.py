"""The images' lock files: every Python package pinned with its sha256 hashes.

The images install them with ``pip install --require-hashes --no-deps``, so a build
gets exactly the locked files or fails. They are generated for the images'
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
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from suite.containers.engine import ContainerError

LOCK_PYTHON = "3.11"
"""CPython version the locks are resolved for (python:3.11-slim and Debian bookworm's python3)."""
LOCK_PLATFORM = "x86_64-unknown-linux-gnu"
"""Target platform of the locks (uv's ``--python-platform``)."""
DEFAULT_INDEX_URL = "https://pypi.org/simple"
"""Index the locks are resolved against; the hashes pin the files whatever index serves them."""
INPUTS_MARKER = "# inputs-sha256: "
IMAGE_EXTRAS = ("offload",)
"""pyproject extras the images install too: ``offload`` (tf.data service) is a mode of the
MNIST workload, which runs in trainbench-cpu."""


class LockError(ContainerError):
    """A lock file is missing, stale or cannot be generated."""


@dataclass(frozen=True)
class LockDef:
    """One lock file and where its requirements come from.

    Attributes:
        name: short name (``cpu``, ``gpu``).
        path: the lock file, relative to the repository root.
        inputs: function of the repository root giving the requirement lines.
        constraint: another lock (relative path) the resolution must agree with, or None.
        description: what the lock is for (written in its header).
    """

    name: str
    path: str
    inputs: Callable[[Path], list[str]]
    constraint: str | None
    description: str


def pyproject_requirements(root: Path) -> list[str]:
    """``[project].dependencies``, the :data:`IMAGE_EXTRAS` that exist, and
    ``[build-system].requires`` of ``root/pyproject.toml``.

    The build backend is locked too: the image installs trainbench itself with
    ``--no-build-isolation --no-index``.

    Raises:
        LockError: pyproject.toml is missing or unreadable.
    """
    path = root / "pyproject.toml"
    try:
        doc = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise LockError(f"cannot read {path}: {exc}") from exc
    project = doc.get("project", {})
    deps = list(project.get("dependencies", []))
    for extra in IMAGE_EXTRAS:
        deps += [r for r in project.get("optional-dependencies", {}).get(extra, []) if not r.startswith("trainbench")]
    build = list(doc.get("build-system", {}).get("requires", []))
    return [*deps, *build]


def requirements_file(relative: str) -> Callable[[Path], list[str]]:
    """Requirement lines of a ``*.in`` file (comments and blank lines dropped)."""

    def read(root: Path) -> list[str]:
        path = root / relative
        try:
            text = path.read_text()
        except OSError as exc:
            raise LockError(f"cannot read {path}: {exc}") from exc
        lines = (line.split("#", 1)[0].strip() for line in text.splitlines())
        return [line for line in lines if line]

    return read


TF_IMAGE_DEPENDENCIES = (
    "numpy",
    "scipy",
    "pillow",
    "pydantic",
    "jsonschema",
    "pyyaml",
    "click",
    "rich",
    "matplotlib",
    "psutil",
    "filelock",
    "py-cpuinfo",
    "nvidia-ml-py",
)
"""pyproject dependencies the TensorFlow image installs (normalized names): what the rank path
(``python -m workloads.rank``: harness, registry, params models) and the ``trainbench`` entrypoint
import at start-up. Left out on purpose: torch, torchvision, MLflow, docker, requests (the image
trains with TensorFlow; results and MLflow are written on the host)."""


def _requirement_name(line: str) -> str:
    """Normalized distribution name of a requirement line (``"py-cpuinfo>=9"`` -> ``py-cpuinfo``)."""
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", line)
    return re.sub(r"[-_.]+", "-", m.group(1)).lower() if m else ""


def tf_image_requirements(root: Path) -> list[str]:
    """Requirement lines of the TensorFlow image: :data:`TF_IMAGE_DEPENDENCIES` as pyproject.toml
    constrains them, the build backend, then ``containers/tf/requirements.in`` (TensorFlow 2.15,
    Horovod's source, CMake).

    Raises:
        LockError: pyproject.toml or requirements.in is unreadable, or pyproject.toml lacks one
            of the listed dependencies (so a rename there cannot silently drop it from the image).
    """
    path = root / "pyproject.toml"
    try:
        doc = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise LockError(f"cannot read {path}: {exc}") from exc
    deps = [d for d in doc.get("project", {}).get("dependencies", []) if _requirement_name(d) in TF_IMAGE_DEPENDENCIES]
    missing = sorted(set(TF_IMAGE_DEPENDENCIES) - {_requirement_name(d) for d in deps})
    if missing:
        raise LockError(f"{path}: the TensorFlow image's dependencies {missing} are not in [project].dependencies")
    build = list(doc.get("build-system", {}).get("requires", []))
    return [*deps, *build, *requirements_file("containers/tf/requirements.in")(root)]


LOCKS: dict[str, LockDef] = {
    "cpu": LockDef(
        "cpu",
        "containers/requirements.lock",
        pyproject_requirements,
        None,
        "pyproject.toml's dependencies, its offload extra and its build backend (every image)",
    ),
    "gpu": LockDef(
        "gpu",
        "containers/gpu/requirements.lock",
        requirements_file("containers/gpu/requirements.in"),
        "containers/requirements.lock",
        "the GPU image's extras: CUDA toolkit pieces, Horovod's source, CMake (containers/gpu/requirements.in)",
    ),
    "tf": LockDef(
        "tf",
        "containers/tf/requirements.lock",
        tf_image_requirements,
        None,
        "the TensorFlow image (no torch): TensorFlow 2.15 (Keras 2), Horovod's source, CMake "
        "(containers/tf/requirements.in) and trainbench's light runtime dependencies",
    ),
}


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
        f"# Platform: {LOCK_PLATFORM}, CPython {LOCK_PYTHON}; installed with pip --require-hashes --no-deps.\n"
        "# Generated by `make lock` (trainbench images lock: uv pip compile --generate-hashes); do not edit.\n"
        f"{INPUTS_MARKER}{digest}\n"
    )
    path = root / lock.path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(header + body)
    return path
