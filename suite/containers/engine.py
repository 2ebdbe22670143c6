"""Reaching the Docker engine, with errors that say where trainbench looked and what to do."""

from __future__ import annotations

import contextlib
import os
import shutil

import docker
from docker.errors import APIError, DockerException, NotFound

from suite.containers.errors import BuildError, ContainerError, EngineUnavailableError

__all__ = ["BuildError", "ContainerError", "EngineUnavailableError", "connect", "docker_cli", "engine_location"]

DEFAULT_SOCKET = "unix:///var/run/docker.sock"
"""Where the Docker SDK and CLI look when ``DOCKER_HOST`` is not set."""

NO_DOCKER_HINT = (
    "Without Docker, run workloads on the host with RUNTIME=local (the default): "
    "`make run WORKLOAD=resnet50-cpu` or `trainbench run resnet50-cpu --runtime local`."
)


def engine_location() -> str:
    """The address the SDK and the CLI use: ``DOCKER_HOST``, else the default Unix socket."""
    host = os.environ.get("DOCKER_HOST")
    return f"{host} (from DOCKER_HOST)" if host else f"{DEFAULT_SOCKET} (DOCKER_HOST is not set)"


def connect(timeout_s: float = 30.0) -> docker.DockerClient:
    """A client for the engine, checked with a ping.

    Args:
        timeout_s: seconds to wait for each API call of the client (builds stream
            without a total limit).

    Raises:
        EngineUnavailableError: nothing answers at ``DOCKER_HOST`` / the default
            socket; the message names the address and says that ``RUNTIME=local``
            needs no engine.
    """
    try:
        client = docker.from_env(timeout=int(timeout_s))
        client.ping()
    except DockerException as exc:
        reason = str(exc).splitlines()[0][:300]
        raise EngineUnavailableError(
            f"no Docker engine is reachable at {engine_location()}: {reason}. "
            "Start one (`sudo dockerd &` or `sudo systemctl start docker`), or set DOCKER_HOST to an engine "
            f"you can reach. {NO_DOCKER_HINT}"
        ) from exc
    return client


def docker_cli() -> str:
    """Path of the ``docker`` command-line client (``trainbench run --runtime docker`` runs it).

    Raises:
        ContainerError: no ``docker`` on PATH.
    """
    path = shutil.which("docker")
    if path is None:
        raise ContainerError(
            "the docker command-line client is not on PATH (Debian/Ubuntu: apt-get install docker.io, "
            f"or docker-ce-cli from Docker's repository). {NO_DOCKER_HINT}"
        )
    return path


def remove_container(client: docker.DockerClient, name: str) -> None:
    """Remove container ``name`` if it is still there (e.g. a rank that outlived its ``docker run`` client)."""
    with contextlib.suppress(NotFound, APIError):
        client.containers.get(name).remove(force=True)
