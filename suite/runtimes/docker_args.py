"""The ``docker run`` of one rank, as a pure function of its inputs, and the docker options of
``trainbench run`` (``--runtime docker``). No Docker SDK here: the command line builds these
options without importing it; :mod:`suite.runtimes.docker` checks the engine and the image.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from harness.system import PERF_ENV_PATTERN
from suite.containers.errors import ContainerError
from suite.launchers import LaunchPlan

SIZE_PATTERN = re.compile(r"^[0-9]+(\.[0-9]+)?[bkmgBKMG]?$")
"""Docker's size syntax: bytes, or a number with a b/k/m/g unit (e.g. 512m, 8g)."""
CPULIST_PATTERN = re.compile(r"^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$")
GPUS_PATTERN = re.compile(r"^(all|[0-9]+|device=[0-9A-Za-z-]+(,[0-9A-Za-z-]+)*)$")
NOT_PASSED = re.compile(r"^(LD_PRELOAD|CUDA_VISIBLE_DEVICES|TRAINBENCH_.*)$")
"""Host variables that are not passed into the container: host library paths, host GPU
numbering and trainbench's own settings (the image sets TRAINBENCH_IMAGE)."""


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
