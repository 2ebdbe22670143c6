"""The workloads' images: registry, build contexts, reuse by input digest, builds through the Docker SDK.

An image's *inputs digest* is the sha256 of everything that decides its content: the
Dockerfile, the lock files, the files of its build context (trainbench's sources)
and the build arguments, among them the base image's id (and, for an image built on
another, that image's id). The image is labelled with it and with its lock hash. A build whose
inputs digest matches an existing image's label reuses that image without building,
so repeated CI runs take seconds. Reuse is keyed on all inputs, not on the lock
alone, so an image never runs older code than the checkout; when only the code
changed, the engine's layer cache still reuses the heavy dependency layers.
"""

from __future__ import annotations

import hashlib
import subprocess
import tarfile
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import docker
from docker.errors import APIError, DockerException, ImageNotFound

from suite.containers.engine import BuildError, ContainerError
from suite.containers.lock import LOCKS, check_lock, file_sha256
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
        ("cpu",),
        ("containers/cpu/Dockerfile", "containers/requirements.lock", "containers/ca/README.md", *SOURCE_CONTEXT),
        description="CPU workloads: resnet50-cpu, mnist, numa-ddp",
    ),
    "trainbench-gpu": ImageDef(
        "trainbench-gpu",
        "containers/gpu/Dockerfile",
        ("cpu", "gpu"),
        (
            "containers/gpu/Dockerfile",
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
        ("tf",),
        ("containers/tf/Dockerfile", "containers/tf/requirements.lock", "containers/ca/README.md", *SOURCE_CONTEXT),
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


@dataclass
class BuiltImage:
    """The outcome of building (or reusing) one image.

    Attributes:
        name: image name; image_id: ``sha256:...``; tags: its tags.
        reused: True if an image with the same inputs digest existed and no build ran.
        seconds: wall time of the build (or the reuse check), s.
        size_bytes: the image's size as the engine reports it, bytes.
        inputs_digest, lock_digest: the labels' values.
        base: the base image reference it was built on.
    """

    name: str
    image_id: str
    tags: list[str]
    reused: bool
    seconds: float
    size_bytes: int
    inputs_digest: str
    lock_digest: str
    base: str


def prune_superseded(client: docker.DockerClient, image: ImageDef, log: Log) -> list[str]:
    """Untag ``image``'s ``:<digest>`` tags that are not on its ``:latest`` image, so the layers
    of superseded inputs (e.g. a previous lock's multi-GB environment) can be freed.

    Never called by a build: a build running at the same time may be using an older image.
    An image another image is built on is only untagged, not deleted, by the engine.

    Returns:
        The tags removed.
    """
    latest = find_image(client, f"{image.name}:latest")
    removed: list[str] = []
    for old in client.images.list(name=image.name):
        if latest is not None and old.id == latest.id:
            continue
        for tag in old.tags:
            if tag.split(":", 1)[0] == image.name:
                try:
                    client.images.remove(tag)
                except (APIError, DockerException) as exc:
                    log(f"{tag}: kept ({exc})\n")
                    continue
                removed.append(tag)
                log(f"removed {tag} ({old.id})\n")
    return removed


def _context_tar(image: ImageDef, root: Path, ca_bundle: Path | None) -> IO[bytes]:
    f = tempfile.TemporaryFile()  # noqa: SIM115 (returned open; the caller closes it)
    with tarfile.open(fileobj=f, mode="w") as tar:
        for arcname, path in context_files(image, root):
            tar.add(path, arcname=arcname, recursive=False)
        if ca_bundle is not None:
            tar.add(ca_bundle, arcname=CA_ARCNAME, recursive=False)
    f.seek(0)
    return f


def _stream(chunks: Iterator[dict[str, Any]], log: Log) -> tuple[str | None, str | None, list[str]]:
    """Forward a build's log; return (image id, error, last lines)."""
    image_id: str | None = None
    error: str | None = None
    tail: list[str] = []
    for chunk in chunks:
        if "stream" in chunk:
            text = str(chunk["stream"])
            log(text)
            tail = (tail + text.splitlines())[-40:]
        elif "status" in chunk and not chunk.get("progressDetail"):
            log(f"{chunk['status']} {chunk.get('id', '')}".rstrip() + "\n")
        if "aux" in chunk and isinstance(chunk["aux"], dict) and "ID" in chunk["aux"]:
            image_id = str(chunk["aux"]["ID"])
        if "error" in chunk:
            error = str(chunk["error"]).strip()
    return image_id, error, tail


def build_image(
    client: docker.DockerClient,
    image: ImageDef,
    log: Log,
    *,
    base: tuple[str, str | None],
    parent_id: str | None = None,
    ca_bundle: Path | None = None,
    network: str | None = "host",
    build_args: dict[str, str] | None = None,
    no_cache: bool = False,
    force: bool = False,
    root: Path = PROJECT_ROOT,
) -> BuiltImage:
    """Build ``image`` (or reuse an identical one) and tag it ``:latest`` and ``:<digest12>``.

    Args:
        client: engine client.
        image: what to build.
        log: receives the build log as it streams, and trainbench's own notes.
        base: ``(reference, id or None)`` of the base image (``BASE_IMAGE``).
        parent_id: for an image with a parent, the parent's id (passed as ``parent_arg``).
        ca_bundle: extra CA bundle (PEM) for the download stage, or None.
        network: the build's network mode (``host`` uses the host's network and proxy).
        build_args: extra build arguments (``KEY=VALUE``), part of the inputs digest.
        no_cache: build every step afresh (implies ``force``).
        force: build even if an image with the same inputs exists.
        root: repository root.

    Raises:
        suite.containers.lock.LockError: a lock file is missing or stale.
        BuildError: the engine refused or the build failed (the failing step's log is included).
        ContainerError: an image with a parent was given no ``parent_id``.
    """
    if image.parent_arg is not None and parent_id is None:
        raise ContainerError(f"{image.name} is built on {image.parent}: build that first")
    for name in image.locks:
        check_lock(LOCKS[name], root)
    args = dict(build_args or {})
    base_ref, base_id = base
    args["BASE_IMAGE"] = base_id or base_ref
    if image.parent_arg is not None and parent_id is not None:
        args[image.parent_arg] = parent_id
    digest = inputs_digest(image, args, root)
    locks = lock_digest(image, root)
    tags = [f"{image.name}:latest", f"{image.name}:{digest[:12]}"]
    start = time.perf_counter()
    existing = None if (force or no_cache) else find_by_inputs(client, image, digest)
    if existing is not None:
        for tag in tags:
            existing.tag(*tag.split(":", 1))
        log(f"{image.name}: inputs unchanged (inputs-sha256 {digest[:12]}), reusing image {existing.id}\n")
        return BuiltImage(
            image.name,
            str(existing.id),
            tags,
            True,
            time.perf_counter() - start,
            int(existing.attrs.get("Size", 0)),
            digest,
            locks,
            base_ref,
        )
    labels = {LABEL_IMAGE: image.name, LABEL_INPUTS: digest, LABEL_LOCK: locks, LABEL_BASE: args["BASE_IMAGE"]}
    if parent_id is not None:
        labels[LABEL_PARENT] = parent_id
    log(f"{image.name}: building from {image.dockerfile} on {base_ref} (inputs-sha256 {digest[:12]})\n")
    with _context_tar(image, root, ca_bundle) as context:
        try:
            chunks = client.api.build(
                fileobj=context,
                custom_context=True,
                dockerfile=image.dockerfile,
                tag=tags[0],
                buildargs={**args, **oci_metadata(root)},
                labels=labels,
                network_mode=network,
                nocache=no_cache,
                rm=True,
                forcerm=True,
                pull=False,
                decode=True,
                timeout=BUILD_TIMEOUT_S,
            )
            image_id, error, tail = _stream(chunks, log)
        except (APIError, DockerException, OSError) as exc:
            raise BuildError(f"the engine refused to build {image.name}: {exc}") from exc
    if error or image_id is None:
        hint = ""
        if base_id is None and any(w in (error or "") for w in ("pull", "registry", "dial tcp", "lookup")):
            hint = (
                f"\nThe base image {base_ref} is not present locally and could not be pulled. On a host without "
                "registry access, build the offline base first: `make base-image`."
            )
        raise BuildError(
            f"building {image.name} failed: {error or 'the engine returned no image id'}\n"
            "last lines of the build log:\n" + "\n".join(tail) + hint
        )
    built = client.images.get(image_id)
    built.tag(*tags[1].split(":", 1))
    return BuiltImage(
        image.name,
        str(built.id),
        tags,
        False,
        time.perf_counter() - start,
        int(built.attrs.get("Size", 0)),
        digest,
        locks,
        base_ref,
    )
