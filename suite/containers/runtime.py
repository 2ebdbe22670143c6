"""``trainbench run --runtime docker``: the same rank command, inside the workload's image.

The runner plans the rank exactly as for a local run, then hands the plan to the
wrapper made here (``RunOptions.wrap``), which puts it inside ``docker run``:

- the run directory is mounted read-write at the same absolute path, so the job,
  measurement and progress files are shared with the parent process on the host,
  which writes the result JSON and logs to MLflow as for a local run;
- a ``data_dir`` parameter and any ``--mount`` paths are mounted read-only at their paths;
- the container runs as the caller (``--user uid:gid``), or, when the caller is root,
  as the image's non-root user, who is given the run directory;
- ``--rm``: the engine removes the container when it exits; a container still
  running when trainbench exits (e.g. a rank killed as hung) is removed then;
- ``--init`` forwards Ctrl-C to the rank, which then writes what it measured;
- the exit status of ``docker run`` is the rank's, so it propagates unchanged.

The image is started by id, and that id goes into the result (``runtime.image_id``).
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docker
from docker.errors import APIError, NotFound

from suite.config import InlineLaunch, RunConfig, RunCpuLaunch
from suite.containers.docker_args import DockerRunOptions, docker_run_command, image_reference, run_as
from suite.containers.engine import ContainerError, connect, docker_cli, engine_location
from suite.containers.images import IMAGES, LABEL_BASE, LABEL_INPUTS, LABEL_PARENT, find_image, inputs_digest
from suite.run.launch import LaunchPlan

__all__ = ["DockerRunOptions", "ImageMissingError", "image_reference", "prepare", "stale_image_note"]


class ImageMissingError(ContainerError):
    """The workload's image is not in the local engine."""


def _remove_container(client: docker.DockerClient, name: str) -> None:
    """Remove container ``name`` if it is still there (its rank outlived the docker client)."""
    with contextlib.suppress(NotFound, APIError):
        client.containers.get(name).remove(force=True)


def stale_image_note(image: Any, ref: str) -> str | None:
    """A warning when a trainbench image was built from other inputs than this checkout's
    (e.g. the code changed since ``make images``), else None."""
    labels = image.labels or {}
    name = ref.split(":", 1)[0]
    if name not in IMAGES or LABEL_INPUTS not in labels or LABEL_BASE not in labels:
        return None
    definition = IMAGES[name]
    args = {"BASE_IMAGE": labels[LABEL_BASE]}
    if definition.parent_arg is not None and LABEL_PARENT in labels:
        args[definition.parent_arg] = labels[LABEL_PARENT]
    try:
        current = inputs_digest(definition, args)
    except (OSError, ContainerError):
        return None
    if current == labels[LABEL_INPUTS]:
        return None
    return (
        f"image {ref} was built from other inputs than this checkout (sources, lock files or build arguments "
        "changed since); the rank runs the image's code. Rebuild it with `make images` if that is not intended."
    )


def _give_back(run_dir: Path, owner: tuple[int, int]) -> None:
    """Return the run directory and what the container wrote in it to the caller (root)."""
    with contextlib.suppress(OSError):
        for path in [run_dir, *run_dir.rglob("*")]:
            os.lchown(path, *owner)


def prepare(
    config: RunConfig, options: DockerRunOptions, warn: Callable[[str], None] | None = None
) -> Callable[[LaunchPlan, Path], LaunchPlan]:
    """Check the engine and the image, and return the ``RunOptions.wrap`` for a docker run.

    Args:
        config: the resolved run config (its ``image`` unless ``options.image``).
        options: the docker options.
        warn: receives a warning when the image is older than the checkout's sources.

    Raises:
        ContainerError: a bad option, or no docker CLI.
        suite.containers.engine.EngineUnavailableError: no engine is reachable.
        ImageMissingError: the image is not in the engine; the message says how to build it.
    """
    options.validate()
    docker_exe = docker_cli()
    client = connect()
    ref = image_reference(options.image or config.image)
    image = find_image(client, ref)
    if image is None:
        name = ref.split(":", 1)[0]
        how = (
            f"Build it with `make images` (trainbench images build {name}); on a host without registry access "
            "run `make base-image` first."
            if name in IMAGES
            else "Pull or build it, or pass --image NAME."
        )
        raise ImageMissingError(f"image {ref} is not in the Docker engine at {engine_location()}. {how}")
    note = stale_image_note(image, ref)
    if note is not None and warn is not None:
        warn(note)
    config_user = str((image.attrs.get("Config") or {}).get("User") or "")
    who = run_as(config_user, os.getuid(), os.getgid())
    read_only = [m.resolve() for m in options.mounts]
    data_dir: Any = config.params.get("data_dir")
    if isinstance(data_dir, str) and data_dir:
        path = Path(data_dir).resolve()
        if not path.exists():
            raise ContainerError(f"data_dir {data_dir}: no such directory (it is mounted read-only into the container)")
        read_only.append(path)
    gpus = options.gpus or ("all" if config.requires_gpu else None)
    effective = DockerRunOptions(
        options.image, options.cpuset_cpus, options.memory, options.shm_size, gpus, options.network, options.mounts
    )

    def wrap(plan: LaunchPlan, run_dir: Path) -> LaunchPlan:
        run_dir = run_dir.resolve()
        if who.chown is not None:
            st = run_dir.stat()
            os.chown(run_dir, *who.chown)
            atexit.register(_give_back, run_dir, (st.st_uid, st.st_gid))
        name = "trainbench-" + re.sub(r"[^A-Za-z0-9_.-]", "-", run_dir.name)
        command = docker_run_command(
            docker_exe=docker_exe,
            plan=plan,
            run_dir=run_dir,
            image_id=image.id,
            image_ref=ref,
            options=effective,
            name=name,
            user=who.user,
            read_only=read_only,
            labels={"org.trainbench.workload": config.workload, "org.trainbench.run-dir": str(run_dir)},
            host_env=dict(os.environ),
            cap_sys_nice=isinstance(config.launch, InlineLaunch | RunCpuLaunch)
            and config.launch.numa_nodes is not None,
        )
        atexit.register(_remove_container, client, name)
        # the rank count and placement stay the launcher's: the runner reads them to gather ranks
        return dataclasses.replace(plan, command=command, runtime="docker", image=ref, image_id=str(image.id))

    return wrap
