"""The workloads' images: registry, build contexts, reuse by input digest, builds through the Docker SDK.

An image's *inputs digest* is the sha256 of everything that decides its content: the
Dockerfile, the lock files, the files of its build context (trainbench's sources)
and the build arguments, among them the base image's id (and, for an image built on
another, that image's id). The image is labelled with it and with its lock hash. A build whose
inputs digest matches an existing image's label reuses that image without building,
so repeated CI runs take seconds. Reuse is keyed on all inputs, not on the lock
alone, so an image never runs older code than the checkout; when only the code
changed, the engine's layer cache still reuses the heavy dependency layers. Building is
:mod:`suite.containers.build`.
"""

from __future__ import annotations

import hashlib
import subprocess
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
from docker.errors import ImageNotFound

from suite.containers.engine import ContainerError
from suite.containers.lock import LOCKS, file_sha256
from suite.provenance import PROJECT_ROOT, git_state

DEFAULT_BASE_IMAGE = "python:3.11-slim"
"""The public base the Dockerfiles default to (what a user with registry access pulls)."""
LOCAL_BASE_IMAGE = "trainbench-base:bookworm"
"""The offline Debian base ``make base-image`` builds; used by default when it exists."""
LABEL_IMAGE = "org.trainbench.image"
LABEL_INPUTS = "org.trainbench.inputs-sha256"
LABEL_LOCK = "org.trainbench.lock-sha256"
LABEL_BASE = "org.trainbench.base-image"
LABEL_PARENT = "org.trainbench.parent-image"
CA_ARCNAME = "containers/ca/extra-ca.pem"
"""Where the extra CA bundle goes in the build context (the Dockerfiles look for it there)."""
BUILD_TIMEOUT_S = 4 * 3600
"""Longest silence tolerated from a build's log stream, seconds (a step may compile for minutes)."""
SOURCE_CONTEXT = ("pyproject.toml", "README.md", "harness", "workloads", "suite")
"""trainbench's own files that the CPU image installs."""
_SKIP_DIRS = {"__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache"}
_SKIP_SUFFIXES = (".pyc", ".pyo")

Log = Callable[[str], None]


class UnknownImageError(ContainerError):
    """An image name that is not in the registry; the message lists the valid names."""


@dataclass(frozen=True)
class ImageDef:
    """One image trainbench builds.

    Attributes:
        name: repository name (tagged ``:latest`` and ``:<inputs digest, 12 hex>``).
        dockerfile: the Dockerfile, relative to the repository root.
        locks: names of the lock files it installs (:data:`suite.containers.lock.LOCKS`).
        context: files and directories of its build context, relative to the root.
        parent: an image built first and passed as the build argument ``parent_arg``
            (``BASE_IMAGE`` is passed to every image).
        parent_arg: name of that build argument.
        description: what the image is for.
    """

    name: str
    dockerfile: str
    locks: tuple[str, ...]
    context: tuple[str, ...]
    parent: str | None = None
    parent_arg: str | None = None
    description: str = ""


IMAGES: dict[str, ImageDef] = {
    "trainbench-cpu": ImageDef(
        "trainbench-cpu",
        "containers/cpu/Dockerfile",
        ("tools", "cpu"),
        (
            "containers/cpu/Dockerfile",
            "containers/tools.lock",
            "containers/requirements.lock",
            "containers/ca/README.md",
            *SOURCE_CONTEXT,
        ),
        description="CPU workloads: resnet50-cpu, mnist, numa-ddp",
    ),
    "trainbench-gpu": ImageDef(
        "trainbench-gpu",
        "containers/gpu/Dockerfile",
        ("tools", "cpu", "gpu"),
        (
            "containers/gpu/Dockerfile",
            "containers/tools.lock",
            "containers/requirements.lock",
            "containers/gpu/requirements.lock",
            "containers/ca/README.md",
        ),
        parent="trainbench-cpu",
        parent_arg="CPU_IMAGE",
        description="GPU workloads: CUDA torch, CUDA toolkit pieces, NCCL, Horovod (NCCL + Gloo)",
    ),
    "trainbench-tf": ImageDef(
        "trainbench-tf",
        "containers/tf/Dockerfile",
        ("tools", "tf"),
        (
            "containers/tf/Dockerfile",
            "containers/tools.lock",
            "containers/tf/requirements.lock",
            "containers/ca/README.md",
            *SOURCE_CONTEXT,
        ),
        description="TensorFlow workloads: TensorFlow 2.15 (CPU, Keras 2), Horovod (TensorFlow + Gloo), no torch",
    ),
}


def get_image(name: str) -> ImageDef:
    """The registered image ``name`` (a ``:tag`` suffix is ignored).

    Raises:
        UnknownImageError: not registered; the message lists the valid names.
    """
    key = name.split(":", 1)[0]
    if key not in IMAGES:
        raise UnknownImageError(f"unknown image {name!r}; images: {', '.join(sorted(IMAGES))}")
    return IMAGES[key]


def with_parents(names: list[str]) -> list[ImageDef]:
    """The images to build for ``names`` (all when empty), each after the image it builds on.

    Raises:
        UnknownImageError: a name is not registered.
    """
    wanted = [get_image(n) for n in names] if names else list(IMAGES.values())
    order: list[ImageDef] = []

    def add(image: ImageDef) -> None:
        if image.parent is not None:
            add(get_image(image.parent))
        if image not in order:
            order.append(image)

    for image in wanted:
        add(image)
    return order


def context_files(image: ImageDef, root: Path = PROJECT_ROOT) -> list[tuple[str, Path]]:
    """``(name in the context, file)`` for every file of the image's build context, sorted.

    Caches and byte code are left out.

    Raises:
        ContainerError: a context entry is missing (not a source checkout?).
    """
    out: list[tuple[str, Path]] = []
    for entry in image.context:
        path = root / entry
        if path.is_file():
            out.append((entry, path))
        elif path.is_dir():
            for f in sorted(path.rglob("*")):
                rel = f.relative_to(root)
                skipped = _SKIP_DIRS & set(rel.parts) or any(p.endswith(".egg-info") for p in rel.parts)
                if f.is_file() and not skipped and not f.name.endswith(_SKIP_SUFFIXES):
                    out.append((rel.as_posix(), f))
        else:
            raise ContainerError(
                f"{path} is missing: images are built from a trainbench source checkout ({root} is not complete)"
            )
    return sorted(out)


def lock_digest(image: ImageDef, root: Path = PROJECT_ROOT) -> str:
    """sha256 over the image's lock files (the ``org.trainbench.lock-sha256`` label).

    Raises:
        suite.containers.lock.LockError: a lock file cannot be read.
    """
    h = hashlib.sha256()
    for name in image.locks:
        h.update(f"{LOCKS[name].path}:{file_sha256(root / LOCKS[name].path)}\n".encode())
    return h.hexdigest()


def inputs_digest(image: ImageDef, build_args: dict[str, str], root: Path = PROJECT_ROOT) -> str:
    """sha256 of everything that decides the image's content (the reuse key).

    Args:
        image: the image.
        build_args: build arguments other than the labels' VERSION/REVISION/SOURCE, with
            ``BASE_IMAGE`` (and the parent's argument) as image ids where the images are local.
        root: repository root.
    """
    h = hashlib.sha256()
    h.update(f"image={image.name}\n".encode())
    for key in sorted(build_args):
        h.update(f"arg {key}={build_args[key]}\n".encode())
    for arcname, path in context_files(image, root):
        mode = "x" if path.stat().st_mode & 0o111 else "-"
        h.update(f"{arcname} {mode} {file_sha256(path)}\n".encode())
    return h.hexdigest()


def oci_metadata(root: Path = PROJECT_ROOT) -> dict[str, str]:
    """``VERSION``, ``REVISION`` and ``SOURCE`` for the OCI labels.

    VERSION is pyproject's version; REVISION the git commit (``-dirty`` when the
    tree has uncommitted changes); SOURCE pyproject's ``[project.urls]`` Source (or
    Repository/Homepage), else the ``origin`` remote, else this checkout as a
    ``git+file://`` URL.
    """
    version = "unknown"
    urls: dict[str, str] = {}
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text()).get("project", {})
        version = str(project.get("version", "unknown"))
        urls = {str(k).lower(): str(v) for k, v in project.get("urls", {}).items()}
    except (OSError, tomllib.TOMLDecodeError):
        pass
    commit, dirty = git_state(root)
    revision = f"{commit}-dirty" if commit and dirty else (commit or "unknown")
    source = urls.get("source") or urls.get("repository") or urls.get("homepage")
    if source is None:
        try:
            proc = subprocess.run(
                ["git", "-C", str(root), "config", "--get", "remote.origin.url"],
                capture_output=True,
                text=True,
                timeout=10,
            )
            source = proc.stdout.strip() or None
        except (OSError, subprocess.SubprocessError):
            source = None
    return {"VERSION": version, "REVISION": revision, "SOURCE": source or f"git+file://{root}"}


def find_image(client: docker.DockerClient, ref: str) -> Any | None:
    """The local image ``ref`` (name[:tag] or id), or None when the engine has none."""
    try:
        return client.images.get(ref)
    except ImageNotFound:
        return None


def find_by_inputs(client: docker.DockerClient, image: ImageDef, digest: str) -> Any | None:
    """A local image of ``image`` labelled with inputs digest ``digest``, or None."""
    found = client.images.list(filters={"label": [f"{LABEL_IMAGE}={image.name}", f"{LABEL_INPUTS}={digest}"]})
    return found[0] if found else None


def resolve_base(client: docker.DockerClient, requested: str | None) -> tuple[str, str | None, str]:
    """The base image to build on: ``(reference, local id or None, why it was chosen)``.

    An explicit choice wins; otherwise the offline base of ``make base-image`` when it
    exists, else the public :data:`DEFAULT_BASE_IMAGE` (pulled by the engine).
    """
    if requested:
        found = find_image(client, requested)
        return requested, found.id if found else None, "requested"
    local = find_image(client, LOCAL_BASE_IMAGE)
    if local is not None:
        return LOCAL_BASE_IMAGE, local.id, "the offline base from `make base-image`"
    found = find_image(client, DEFAULT_BASE_IMAGE)
    return DEFAULT_BASE_IMAGE, found.id if found else None, "the Dockerfile's default"
