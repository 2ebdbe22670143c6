"""``--runtime docker``: the same rank command as a local run, inside the workload's image.

The launcher plans the rank exactly as for a local run, then :meth:`DockerRuntime.wrap` puts
the plan inside ``docker run``:

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

The image is started by id, and that id goes into the result (``runtime.image_id``). The
Docker SDK is imported only when the runtime is prepared, so the command line starts
without it.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from suite.config import RunConfig
from suite.containers.errors import ContainerError, ImageMissingError
from suite.launchers import LaunchPlan
from suite.runtimes.base import Ran, RunContext
from suite.runtimes.docker_args import DockerRunOptions, docker_run_command, image_reference, run_as
from suite.runtimes.local import LocalRuntime, visible_gpus
from suite.runtimes.supervise import launch_rank

__all__ = ["DockerRunOptions", "DockerRuntime", "ImageMissingError", "image_reference", "stale_image_note"]

Wrap = Callable[[LaunchPlan, Path], LaunchPlan]
"""The local launch plan and the run directory -> the same plan inside ``docker run``."""


def stale_image_note(image: Any, ref: str) -> str | None:
    """A warning when a trainbench image was built from other inputs than this checkout's
    (e.g. the code changed since ``make images``), else None."""
    from suite.containers.images import IMAGES, LABEL_BASE, LABEL_INPUTS, LABEL_PARENT, inputs_digest

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


def prepare(config: RunConfig, options: DockerRunOptions, warn: Callable[[str], None] | None = None) -> Wrap:
    """Check the engine and the image, and return the wrapper that puts a local plan inside ``docker run``.

    Args:
        config: the resolved run config (its ``image`` unless ``options.image``).
        options: the docker options.
        warn: receives a warning when the image is older than the checkout's sources.

    Raises:
        ContainerError: a bad option, or no docker CLI.
        suite.containers.errors.EngineUnavailableError: no engine is reachable.
        ImageMissingError: the image is not in the engine; the message says how to build it.
    """
    from suite.containers.engine import connect, docker_cli, engine_location, remove_container
    from suite.containers.images import IMAGES, find_image

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
    effective = dataclasses.replace(options, gpus=gpus)

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
            cap_sys_nice=config.launch.binds_memory(),
        )
        atexit.register(remove_container, client, name)
        # the rank count and placement stay the launcher's: the runner reads them to gather ranks
        return dataclasses.replace(plan, command=command, runtime="docker", image=ref, image_id=str(image.id))

    return wrap


@dataclass
class DockerRuntime(LocalRuntime):
    """``--runtime docker``: the ranks run in the workload's image, supervised from this host.

    Attributes:
        options: the docker options (``--image``, ``--cpuset-cpus``, ``--memory``, ...).
        warn: receives a warning when the image is older than the checkout's sources.
    """

    name: str = "docker"
    options: DockerRunOptions = field(default_factory=DockerRunOptions)
    warn: Callable[[str], None] | None = None
    _prepared: dict[str, Wrap] = field(default_factory=dict, repr=False, compare=False)

    def preflight(self, config: RunConfig, output_dir: Path) -> None:
        """The local checks a container shares (launch plan, a GPU on the host), then the engine and the
        image (once per image and workload: a sweep's points reuse it).

        Raises:
            ContainerError: no engine, no image, or a bad docker option.
            suite.launchers.LaunchError, suite.errors.PreflightError: as for a local run.
        """
        super().preflight(config, output_dir)
        self.wrapper(config)

    def check_launcher(self, config: RunConfig, gpus: int) -> None:
        """Nothing: the image brings the launcher's tools (Horovod, numactl)."""
        return None

    def wrapper(self, config: RunConfig) -> Wrap:
        """The ``docker run`` wrapper of ``config`` (prepared on first use).

        Raises:
            ContainerError: no engine, no image, or a bad docker option.
        """
        key = f"{config.workload}|{config.image}|{config.params.get('data_dir')}"
        if key not in self._prepared:
            self._prepared[key] = prepare(config, self.options, self.warn)
        return self._prepared[key]

    def run(self, config: RunConfig, run_dir: Path, ctx: RunContext) -> Ran:
        """Start the ranks in the image and follow them to their end."""
        return launch_rank(config, run_dir, ctx, self.wrapper(config), gpus=visible_gpus(config))
