"""The demo Slurm cluster's containers: its node image, its network and one container per node.

The Slurm side (slurm.conf, munge key, host munged, readiness) is
:mod:`suite.slurm.cluster`; this module is only what talks to Docker, as every Docker
call of trainbench lives in ``suite/containers``.

- The node image ``trainbench-slurm`` is built on the workload image ``trainbench-gpu``
  (``containers/slurm/Dockerfile``) with :func:`suite.containers.images.build_image`,
  so it is labelled with its inputs digest and reused when nothing changed.
- Every container and the network carry the label ``org.trainbench.slurm-cluster=<name>``,
  so :func:`remove_cluster` finds all of them even when the state directory is gone.
- Containers run with ``--init`` (slurmd as PID 1 left finished job steps as zombies),
  unprivileged, each compute node on its own cpuset when the host has the cores.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import docker
from docker.errors import APIError, DockerException, NotFound

from suite.containers.build import BuiltImage, build_image
from suite.containers.engine import ContainerError
from suite.containers.errors import ImageMissingError
from suite.containers.images import SOURCE_CONTEXT, ImageDef, find_image, resolve_base

LABEL_CLUSTER = "org.trainbench.slurm-cluster"
NODE_IMAGE = ImageDef(
    "trainbench-slurm",
    "containers/slurm/Dockerfile",
    (),
    ("containers/slurm/Dockerfile", "containers/slurm/node-entrypoint.sh", *SOURCE_CONTEXT),
    parent="trainbench-gpu",
    parent_arg="WORKLOAD_IMAGE",
    description="a node of the demo Slurm cluster: trainbench-gpu + Slurm 22.05 + munge",
)


def build_node_image(
    client: docker.DockerClient, log: Callable[[str], None], workload_image: str, force: bool = False
) -> BuiltImage:
    """Build (or reuse) the node image on the local workload image (default ``trainbench-gpu``).

    Raises:
        ImageMissingError: the workload image is not built; the message says how to build it.
        suite.containers.engine.BuildError: the build failed (its log's end is in the message).
    """
    parent = find_image(client, workload_image)
    if parent is None:
        name = workload_image.split(":", 1)[0]
        raise ImageMissingError(
            f"the demo cluster's nodes run the workload image {workload_image}, which is not built: "
            f"run `make images IMAGES={name}` (`make base-image` first on a host without registry access)"
        )
    base_ref, base_id, _ = resolve_base(client, None)
    return build_image(client, NODE_IMAGE, log, base=(base_ref, base_id), parent_id=str(parent.id), force=force)


@dataclass(frozen=True)
class NodeContainer:
    """One container of the cluster.

    Attributes:
        name: container name; hostname: its host name (= the Slurm node name).
        role: ``controller`` or ``node`` (the entrypoint's argument).
        cpuset: CPUs it may use (``--cpuset-cpus``), or None for all.
        mounts: host path -> (path in the container, ``ro`` or ``rw``).
    """

    name: str
    hostname: str
    role: str
    cpuset: str | None = None
    mounts: dict[str, tuple[str, str]] = field(default_factory=dict)


def start_cluster(
    client: docker.DockerClient, cluster: str, image_id: str, network: str, containers: list[NodeContainer]
) -> dict[str, str]:
    """Create the network and start the containers; return host name -> IP address on the network.

    Raises:
        ContainerError: the engine refused (e.g. a name already in use: run ``make slurm-down``).
    """
    labels = {LABEL_CLUSTER: cluster}
    addresses: dict[str, str] = {}
    try:
        client.networks.create(network, driver="bridge", labels=labels)
        for c in containers:
            volumes = {src: {"bind": dst, "mode": mode} for src, (dst, mode) in c.mounts.items()}
            client.containers.run(
                image_id,
                [c.role],
                name=c.name,
                hostname=c.hostname,
                network=network,
                detach=True,
                init=True,
                cpuset_cpus=c.cpuset,
                shm_size="1g",
                labels={**labels, "org.trainbench.slurm-role": c.role},
                volumes=volumes,
            )
        for c in containers:
            got = client.containers.get(c.name)
            addresses[c.hostname] = got.attrs["NetworkSettings"]["Networks"][network]["IPAddress"]
    except (APIError, DockerException, KeyError) as exc:
        raise ContainerError(f"starting the Slurm cluster {cluster!r} failed: {exc}") from exc
    return addresses


def container_logs(client: docker.DockerClient, name: str, lines: int = 30) -> str:
    """The last ``lines`` lines of a container's output ('' when it is gone)."""
    with contextlib.suppress(NotFound, APIError):
        raw: Any = client.containers.get(name).logs(tail=lines)
        return raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)
    return ""


def running(client: docker.DockerClient, name: str) -> bool:
    """Whether container ``name`` exists and runs."""
    try:
        return bool(client.containers.get(name).status == "running")
    except (NotFound, APIError):
        return False


def remove_cluster(client: docker.DockerClient, cluster: str) -> list[str]:
    """Remove every container and network labelled as cluster ``cluster``; return what was removed.

    Raises:
        ContainerError: something labelled could not be removed.
    """
    removed: list[str] = []
    selector: dict[str, str | list[str] | bool] = {"label": f"{LABEL_CLUSTER}={cluster}"}
    try:
        for c in client.containers.list(all=True, filters=selector):
            c.remove(force=True)
            removed.append(f"container {c.name}")
        for n in client.networks.list(filters=selector):
            n.remove()
            removed.append(f"network {n.name}")
    except (APIError, DockerException) as exc:
        raise ContainerError(f"removing the Slurm cluster {cluster!r} failed: {exc}") from exc
    return removed


def add_user(client: docker.DockerClient, container: str, uid: int, gid: int, name: str) -> None:
    """Give container ``container`` a user ``uid:gid`` (jobs run as the submitting user, whom slurmd must know).

    Raises:
        ContainerError: the user could not be added.
    """
    script = (
        f"getent group {gid} >/dev/null || groupadd -g {gid} {name}; "
        f"getent passwd {uid} >/dev/null || useradd -M -N -u {uid} -g {gid} -d /tmp -s /bin/sh {name}"
    )
    try:
        code, out = client.containers.get(container).exec_run(["sh", "-c", script], stream=False)
    except (APIError, DockerException) as exc:
        raise ContainerError(f"adding user {uid} to {container} failed: {exc}") from exc
    if code != 0:
        text = out.decode(errors="replace") if isinstance(out, bytes) else ""
        raise ContainerError(f"adding user {uid} to {container} failed: {text[-500:]}")
