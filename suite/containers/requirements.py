"""What each image's lock file pins: the requirement sources of the locks (:data:`LOCKS`) and
the platform they are resolved for. Checking and generating the lock files is :mod:`.lock`."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from suite.containers.errors import ContainerError

LOCK_PYTHON = "3.11"
"""CPython version the locks are resolved for (python:3.11-slim and Debian bookworm's python3)."""
LOCK_PLATFORM = "x86_64-unknown-linux-gnu"
"""Target platform of the locks (uv's ``--python-platform``)."""
DEFAULT_INDEX_URL = "https://pypi.org/simple"
"""Index the locks are resolved against; the hashes pin the files whatever index serves them."""
INPUTS_MARKER = "# inputs-sha256: "
IMAGE_EXTRAS = ("run", "offload")
"""pyproject extras the images install besides the core: ``run`` (the main job: torch, MLflow,
the Docker SDK), and ``offload`` (tf.data service), a mode of the MNIST workload, which runs in
trainbench-cpu."""


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


def _read_pyproject(root: Path) -> dict[str, Any]:
    path = root / "pyproject.toml"
    try:
        return tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise LockError(f"cannot read {path}: {exc}") from exc


def project_requirements(doc: dict[str, Any], extras: tuple[str, ...]) -> list[str]:
    """``[project].dependencies`` then the lines of each of ``extras``, with the extras an extra
    names (``trainbench[plots]``) expanded in place; each line once, in that order."""
    project = doc.get("project", {})
    optional: dict[str, list[str]] = project.get("optional-dependencies", {})
    out: list[str] = list(project.get("dependencies", []))
    seen: set[str] = set()

    def add(extra: str) -> None:
        if extra in seen:
            return
        seen.add(extra)
        for line in optional.get(extra, []):
            m = re.fullmatch(r"\s*trainbench\[([^\]]*)\]\s*", line)
            if m:
                for inner in m.group(1).split(","):
                    add(inner.strip())
            elif line not in out:
                out.append(line)

    for extra in extras:
        add(extra)
    return out


def pyproject_requirements(root: Path) -> list[str]:
    """``[project].dependencies``, the :data:`IMAGE_EXTRAS` that exist, and
    ``[build-system].requires`` of ``root/pyproject.toml``.

    The build backend is locked too: the image installs trainbench itself with
    ``--no-build-isolation --no-index``.

    Raises:
        LockError: pyproject.toml is missing or unreadable.
    """
    doc = _read_pyproject(root)
    build = list(doc.get("build-system", {}).get("requires", []))
    return [*project_requirements(doc, IMAGE_EXTRAS), *build]


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
"""pyproject dependencies (core or extras) the TensorFlow image installs (normalized names): what the rank path
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
    doc = _read_pyproject(root)
    extras = tuple(doc.get("project", {}).get("optional-dependencies", {}))
    deps = [d for d in project_requirements(doc, extras) if _requirement_name(d) in TF_IMAGE_DEPENDENCIES]
    missing = sorted(set(TF_IMAGE_DEPENDENCIES) - {_requirement_name(d) for d in deps})
    if missing:
        raise LockError(
            f"{root / 'pyproject.toml'}: the TensorFlow image's dependencies {missing} are in neither "
            "[project].dependencies nor an extra"
        )
    build = list(doc.get("build-system", {}).get("requires", []))
    return [*deps, *build, *requirements_file("containers/tf/requirements.in")(root)]


LOCKS: dict[str, LockDef] = {
    "cpu": LockDef(
        "cpu",
        "containers/requirements.lock",
        pyproject_requirements,
        None,
        "pyproject.toml's dependencies, its run and offload extras and its build backend (every image)",
    ),
    "gpu": LockDef(
        "gpu",
        "containers/gpu/requirements.lock",
        requirements_file("containers/gpu/requirements.in"),
        "containers/requirements.lock",
        "the GPU image's extras: CUDA toolkit pieces, Horovod's source, CMake (containers/gpu/requirements.in)",
    ),
    "tools": LockDef(
        "tools",
        "containers/tools.lock",
        requirements_file("containers/tools.in"),
        None,
        "the installer of the images' install steps, uv (containers/tools.in); bootstrapped with pip "
        "--require-hashes into a throwaway virtual environment that no image keeps",
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
