"""Building an image through the Docker SDK (or reusing one whose inputs are unchanged), with
the build log streamed, and untagging the images of superseded inputs."""

from __future__ import annotations

import re
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import docker
from docker.errors import APIError, DockerException

from suite.containers.engine import BuildError, ContainerError
from suite.containers.images import (
    BUILD_TIMEOUT_S,
    CA_ARCNAME,
    LABEL_BASE,
    LABEL_IMAGE,
    LABEL_INPUTS,
    LABEL_LOCK,
    LABEL_PARENT,
    ImageDef,
    Log,
    context_files,
    find_by_inputs,
    find_image,
    inputs_digest,
    lock_digest,
    oci_metadata,
)
from suite.containers.lock import LOCKS, check_lock
from suite.provenance import PROJECT_ROOT


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


_STEP = re.compile(r"^Step (\d+/\d+) : (.*)")


def _stream(
    chunks: Iterator[dict[str, Any]], log: Log, clock: Callable[[], float] = time.perf_counter
) -> tuple[str | None, str | None, list[str]]:
    """Forward a build's log; return (image id, error, last lines).

    After each Dockerfile step (the engine's ``Step N/M : INSTRUCTION`` lines) it logs
    ``step N/M: S s (INSTRUCTION)``, the step's wall time in seconds by ``clock``, so a slow
    build says which step cost it; a cached step takes about 0 s.
    """
    image_id: str | None = None
    error: str | None = None
    tail: list[str] = []
    step: tuple[str, str, float] | None = None

    def step_done() -> None:
        if step is not None:
            log(f"step {step[0]}: {clock() - step[2]:.1f} s ({step[1][:70]})\n")

    for chunk in chunks:
        if "stream" in chunk:
            text = str(chunk["stream"])
            match = _STEP.match(text)
            if match:
                step_done()
                step = (match[1], match[2].strip(), clock())
            log(text)
            tail = (tail + text.splitlines())[-40:]
        elif "status" in chunk and not chunk.get("progressDetail"):
            log(f"{chunk['status']} {chunk.get('id', '')}".rstrip() + "\n")
        if "aux" in chunk and isinstance(chunk["aux"], dict) and "ID" in chunk["aux"]:
            image_id = str(chunk["aux"]["ID"])
        if "error" in chunk:
            error = str(chunk["error"]).strip()
    step_done()
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
