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
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
from docker.errors import APIError, NotFound

from harness.system import PERF_ENV_PATTERN
from suite.containers.engine import ContainerError, connect, docker_cli, engine_location
from suite.containers.images import IMAGES, LABEL_BASE, LABEL_INPUTS, LABEL_PARENT, find_image, inputs_digest
from suite.launch import LaunchPlan
from suite.specs import RunConfig

SIZE_PATTERN = re.compile(r"^[0-9]+(\.[0-9]+)?[bkmgBKMG]?$")
"""Docker's size syntax: bytes, or a number with a b/k/m/g unit (e.g. 512m, 8g)."""
CPULIST_PATTERN = re.compile(r"^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$")
GPUS_PATTERN = re.compile(r"^(all|[0-9]+|device=[0-9A-Za-z-]+(,[0-9A-Za-z-]+)*)$")
NOT_PASSED = re.compile(r"^(LD_PRELOAD|CUDA_VISIBLE_DEVICES|TRAINBENCH_.*)$")
"""Host variables that are not passed into the container: host library paths, host GPU
numbering and trainbench's own settings (the image sets TRAINBENCH_IMAGE)."""


class ImageMissingError(ContainerError):
    """The workload's image is not in the local engine."""


@dataclass(frozen=True)
class DockerRunOptions:
    """Options of ``trainbench run --runtime docker``.

    Attributes:
        image: image to run instead of the workload spec's ``image``.
        cpuset_cpus: CPUs the container may use (``docker run --cpuset-cpus``), e.g. ``0-3``.
        memory: memory limit (``--memory``), e.g. ``8g``; swap is not added on top.
        shm_size: size of /dev/shm (``--shm-size``); DataLoader workers pass batches through it.
        gpus: GPUs (``--gpus``: ``all``, a count, or ``device=0,1``); default ``all`` for
            workloads that need a GPU, none otherwise.
        network: network mode (``host`` by default, as a local run sees the network).
        mounts: extra host paths mounted read-only at the same path (e.g. a dataset).
    """

    image: str | None = None
    cpuset_cpus: str | None = None
    memory: str | None = None
    shm_size: str = "1g"
    gpus: str | None = None
    network: str = "host"
    mounts: tuple[Path, ...] = field(default_factory=tuple)

    def validate(self) -> None:
        """Check the formats before anything starts.

        Raises:
            ContainerError: a value docker would refuse; the message shows the syntax.
        """
        if self.cpuset_cpus is not None and not CPULIST_PATTERN.match(self.cpuset_cpus):
            raise ContainerError(f"--cpuset-cpus {self.cpuset_cpus!r}: expected a CPU list such as 0-3 or 0,2")
        for flag, value in (("--memory", self.memory), ("--shm-size", self.shm_size)):
            if value is not None and not SIZE_PATTERN.match(value):
                raise ContainerError(f"{flag} {value!r}: expected a size such as 512m or 8g")
        if self.gpus is not None and not GPUS_PATTERN.match(self.gpus):
            raise ContainerError(f"--gpus {self.gpus!r}: expected all, a count, or device=0,1")
        for m in self.mounts:
            if not m.exists():
                raise ContainerError(f"--mount {m}: no such file or directory")
            exposed = _engine_socket_under(m)
            if exposed is not None:
                raise ContainerError(
                    f"--mount {m}: it would put the Docker engine's socket ({exposed}) inside the container, "
                    "which gives the workload control of the host (a read-only mount does not prevent that); "
                    "mount only the dataset directory"
                )


def _engine_socket_under(path: Path) -> Path | None:
    """The engine's Unix socket if ``path`` is it, a socket, or a directory that contains it; else None.

    The sockets checked: ``DOCKER_HOST`` when it is ``unix://...``, and /var/run/docker.sock
    (both resolved, so /var/run -> /run is seen through).
    """
    host = os.environ.get("DOCKER_HOST", "")
    candidates = {Path("/var/run/docker.sock").resolve()}
    if host.startswith("unix://"):
        candidates.add(Path(host.removeprefix("unix://")).resolve())
    target = path.resolve()
    if target.is_socket():
        return target
    for sock in candidates:
        if sock.exists() and (sock == target or target in sock.parents):
            return sock
    return None


def image_reference(name: str) -> str:
    """``name`` with ``:latest`` added when it has no tag or digest."""
    if name.startswith("sha256:") or "@" in name or ":" in name.rsplit("/", 1)[-1]:
        return name
    return f"{name}:latest"


def container_command(plan: LaunchPlan, host_python: str = sys.executable) -> tuple[str | None, list[str]]:
    """``(entrypoint override or None, arguments)`` that run ``plan``'s rank inside the image.

    The host interpreter becomes the image's ``python``. The plain rank command
    becomes ``trainbench rank ...`` through the image's entrypoint; a launcher
    prefix (numactl, run_cpu) becomes the entrypoint instead.
    """
    cmd = ["python" if arg == host_python else arg for arg in plan.command]
    if cmd[:3] == ["python", "-m", "workloads.rank"]:
        return None, ["rank", *cmd[3:]]
    return cmd[0], cmd[1:]


@dataclass(frozen=True)
class RunAs:
    """Who the container runs as: ``--user`` value (None: the image's user), and the
    owner ``(uid, gid)`` to give the run directory first (None: leave it)."""

    user: str | None
    chown: tuple[int, int] | None


def run_as(image_user: str, host_uid: int, host_gid: int) -> RunAs:
    """The caller's uid:gid when not root (results stay the caller's); for root, the
    image's own non-root user, who must be able to write the run directory."""
    if host_uid != 0:
        return RunAs(f"{host_uid}:{host_gid}", None)
    m = re.fullmatch(r"([0-9]+)(?::([0-9]+))?", image_user.strip())
    if m and int(m.group(1)) != 0:
        uid = int(m.group(1))
        return RunAs(None, (uid, int(m.group(2) or uid)))
    if image_user.strip() in ("", "root", "0", "0:0"):
        return RunAs(None, None)
    raise ContainerError(
        f"the image runs as user {image_user!r}; trainbench needs a numeric USER uid:gid to share the run directory"
    )


def docker_run_command(
    *,
    docker_exe: str,
    plan: LaunchPlan,
    run_dir: Path,
    image_id: str,
    image_ref: str,
    options: DockerRunOptions,
    name: str,
    user: str | None,
    read_only: list[Path],
    labels: dict[str, str],
    host_env: dict[str, str],
    cap_sys_nice: bool = False,
    host_python: str = sys.executable,
) -> list[str]:
    """The ``docker run`` argv for one rank (a pure function of its inputs).

    Args:
        docker_exe: the docker CLI.
        plan: the local launch plan (its env_set is passed with ``-e``).
        run_dir: the run directory, mounted read-write at the same path (also the workdir's fallback).
        image_id: the image to start (by id, so the result names exactly what ran).
        image_ref: the image's name, recorded in the container as TRAINBENCH_IMAGE.
        options: the user's docker options.
        name: container name.
        user: ``--user`` value, or None for the image's user.
        read_only: host paths mounted read-only at the same path.
        labels: container labels.
        host_env: the caller's environment; its performance variables
            (:data:`harness.system.PERF_ENV_PATTERN`) are passed, as a local rank inherits them.
        cap_sys_nice: add CAP_SYS_NICE (needed by ``numactl --membind`` under Docker's seccomp profile).
        host_python: the host interpreter path in ``plan.command``.
    """
    cmd = [docker_exe, "run", "--rm", "--init", "--name", name, "--network", options.network]
    cmd += ["--shm-size", options.shm_size]
    if options.cpuset_cpus is not None:
        cmd += ["--cpuset-cpus", options.cpuset_cpus]
    if options.memory is not None:
        cmd += ["--memory", options.memory, "--memory-swap", options.memory]
    if options.gpus is not None:
        cmd += ["--gpus", options.gpus]
    if cap_sys_nice:
        cmd += ["--cap-add", "SYS_NICE"]
    if user is not None:
        cmd += ["--user", user, "--env", "HOME=/tmp"]
    for key, value in sorted(labels.items()):
        cmd += ["--label", f"{key}={value}"]
    cmd += ["--volume", f"{run_dir}:{run_dir}:rw"]
    for path in read_only:
        cmd += ["--volume", f"{path}:{path}:ro"]
    cwd = Path.cwd()
    cmd += ["--workdir", str(cwd if cwd.is_absolute() else run_dir)]
    env = {k: v for k, v in host_env.items() if PERF_ENV_PATTERN.match(k) and not NOT_PASSED.match(k)}
    env.update(plan.env_set)
    env["TRAINBENCH_IMAGE"] = image_ref
    for key in sorted(env):
        cmd += ["--env", f"{key}={env[key]}"]
    entrypoint, args = container_command(plan, host_python)
    if entrypoint is not None:
        cmd += ["--entrypoint", entrypoint]
    return [*cmd, image_id, *args]


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
            cap_sys_nice=config.launch.numa_nodes is not None,
        )
        atexit.register(_remove_container, client, name)
        # the rank count and placement stay the launcher's: the runner reads them to gather ranks
        return dataclasses.replace(plan, command=command, runtime="docker", image=ref, image_id=str(image.id))

    return wrap
