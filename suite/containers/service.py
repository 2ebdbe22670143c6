"""A tf.data service (dispatcher + workers) in CPU-pinned containers, for a trainer on the host.

This is the heterogeneous-cluster pattern of issue 5 simulated on one machine: the
preprocessing side runs in containers whose cpusets the trainer does not share, as an
extra CPU machine would. Each container runs ``trainbench data-service`` from the image
(nothing else is started in it). Ports are published on 127.0.0.1 only; a worker listens
on the same port number inside and outside its container and advertises
``127.0.0.1:PORT``, which is the address the dispatcher hands to the trainer (tf.data
clients fetch elements from workers directly).
"""

from __future__ import annotations

import contextlib
import socket
import time
import uuid
from collections.abc import Sequence
from types import TracebackType
from typing import Any

from docker.errors import DockerException, ImageNotFound

from harness.system import parse_cpulist
from suite.containers.engine import connect
from suite.containers.errors import ContainerError, ImageMissingError
from suite.datasets.service import READY

DISPATCHER_PORT = 5050
"""The dispatcher's port inside its container (published on a free loopback port)."""

START_TIMEOUT_S = 240.0
"""Seconds a server container may take to print its readiness line (TensorFlow imports slowly)."""


def _free_port() -> int:
    """A TCP port that is free on 127.0.0.1 now (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def check_service_image(image: str) -> Any:
    """Connect to the engine and find ``image``; returns the client (check before a long benchmark).

    Raises:
        suite.containers.errors.EngineUnavailableError: no Docker engine answers.
        ImageMissingError: the image is not in the engine.
    """
    client = connect()
    try:
        client.images.get(image)
    except ImageNotFound as exc:
        raise ImageMissingError(
            f"image {image} is not in the Docker engine; build it with `make images` "
            "(`trainbench images build trainbench-cpu`)"
        ) from exc
    return client


class ContainerService:
    """Dispatcher and workers of a tf.data service, each in its own pinned container.

    Args:
        image: image reference holding trainbench with its ``offload`` extra
            (TensorFlow), e.g. ``trainbench-cpu:latest``.
        worker_cpus: one cpuset (``"1"``, ``"2-3"``) per worker container.
        dispatcher_cpus: the dispatcher container's cpuset.

    Attributes (set on entry):
        address: ``127.0.0.1:PORT`` where the trainer reaches the dispatcher.
        workers: (advertised address, CPUs the worker reported from inside) per worker.

    Raises (on entry):
        suite.containers.errors.EngineUnavailableError: no Docker engine answers.
        ImageMissingError: the image is not in the engine (build it with ``make images``).
        ContainerError: a container exited or stayed silent for ``START_TIMEOUT_S``; the
            message carries the end of its log. Everything started is removed first.
    """

    def __init__(self, image: str, worker_cpus: Sequence[str], dispatcher_cpus: str) -> None:
        if not worker_cpus:
            raise ContainerError("a container data service needs at least one worker cpuset")
        self.image = image
        self.worker_cpus = list(worker_cpus)
        self.dispatcher_cpus = dispatcher_cpus
        self.address = ""
        self.workers: list[tuple[str, list[int]]] = []
        self._client: Any = None
        self._network: Any = None
        self._started: list[Any] = []

    def __enter__(self) -> ContainerService:
        self._client = check_service_image(self.image)
        tag = f"tb-service-{uuid.uuid4().hex[:8]}"
        try:
            self._network = self._client.networks.create(tag, driver="bridge")
            host_port = _free_port()
            dispatcher = self._start(
                f"{tag}-dispatcher",
                ["data-service", "dispatcher", "--port", str(DISPATCHER_PORT)],
                self.dispatcher_cpus,
                {f"{DISPATCHER_PORT}/tcp": ("127.0.0.1", host_port)},
            )
            self._wait_ready(dispatcher)
            self.address = f"127.0.0.1:{host_port}"
            workers = []
            for i, cpus in enumerate(self.worker_cpus):
                port = _free_port()
                args = ["data-service", "worker", "--dispatcher", f"{tag}-dispatcher:{DISPATCHER_PORT}"]
                args += ["--port", str(port), "--advertise", "127.0.0.1"]
                workers.append(self._start(f"{tag}-worker{i}", args, cpus, {f"{port}/tcp": ("127.0.0.1", port)}))
            for w in workers:
                address, cpus_seen = self._wait_ready(w)
                self.workers.append((address, cpus_seen))
        except BaseException:
            self._remove_all()
            raise
        return self

    def _start(self, name: str, command: list[str], cpus: str, ports: dict[str, tuple[str, int]]) -> Any:
        try:
            container = self._client.containers.run(
                self.image,
                command,
                name=name,
                hostname=name,
                network=self._network.name,
                cpuset_cpus=cpus,
                ports=ports,
                labels={"org.trainbench.role": "data-service"},
                detach=True,
            )
        except DockerException as exc:
            raise ContainerError(f"could not start container {name} ({' '.join(command)}): {exc}") from exc
        self._started.append(container)
        return container

    def _wait_ready(self, container: Any) -> tuple[str, list[int]]:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            for line in container.logs(stdout=True, stderr=False).decode(errors="replace").splitlines():
                if line.startswith(READY):
                    _, _, address, cpus = line.split()
                    return address, parse_cpulist(cpus)
            container.reload()
            if container.status not in ("created", "running"):
                break
            time.sleep(0.5)
        tail = container.logs().decode(errors="replace")[-2000:]
        raise ContainerError(f"container {container.name} did not become ready; its log ends:\n{tail}")

    def _remove_all(self) -> None:
        for c in reversed(self._started):
            with contextlib.suppress(DockerException):
                c.remove(force=True)
        self._started.clear()
        if self._network is not None:
            with contextlib.suppress(DockerException):
                self._network.remove()
            self._network = None

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self._remove_all()
