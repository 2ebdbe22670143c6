"""Options shared by several commands: ``--runtime`` and its docker options, as one typed runtime.

The runtime says where the rank runs, whatever its launcher: on the host
(:class:`LocalRuntime`) or inside the workload's image
(:class:`suite.containers.docker_args.DockerRunOptions`). A command decorated with
:func:`runtime_options` receives one ``runtime: Runtime`` argument, and turns it into
the run's wrapper with :func:`runtime_wrapper`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from suite.config import RunConfig
from suite.console import warn
from suite.containers.docker_args import DockerRunOptions
from suite.run.options import Wrap


@dataclass(frozen=True)
class LocalRuntime:
    """``--runtime local``: the rank runs on the host, beside trainbench."""


Runtime = LocalRuntime | DockerRunOptions
"""Where the ranks run: one typed variant per runtime."""


def runtime_wrapper(runtime: Runtime, config: RunConfig) -> Wrap | None:
    """The ``RunOptions.wrap`` for ``config``: None for a local run.

    Raises:
        suite.containers.errors.ContainerError: no engine, no image, or a bad docker option.
    """
    if isinstance(runtime, LocalRuntime):
        return None
    from suite.containers.runtime import prepare  # imports the Docker SDK: only for --runtime docker

    return prepare(config, runtime, warn)


_DOCKER_ONLY = {
    "image": "--image",
    "cpuset_cpus": "--cpuset-cpus",
    "memory": "--memory",
    "shm_size": "--shm-size",
    "gpus": "--gpus",
    "network": "--network",
    "mounts": "--mount",
}
"""Parameter name -> flag of the options that apply to ``--runtime docker`` only."""


def runtime_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--runtime`` and the docker options to a click command; the command receives
    them as one ``runtime: Runtime`` argument. Docker options with ``--runtime local`` are
    a usage error (exit 2)."""

    @functools.wraps(f)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        values = {k: kwargs.pop(k) for k in ("runtime", *_DOCKER_ONLY)}
        runtime = values.pop("runtime")
        given = [k for k in _DOCKER_ONLY if values[k] not in (None, ())]
        if runtime == "local":
            if given:
                flags = ", ".join(_DOCKER_ONLY[k] for k in given)
                raise click.UsageError(f"{flags} apply to --runtime docker only (RUNTIME=docker with make)")
            kwargs["runtime"] = LocalRuntime()
            return f(*args, **kwargs)
        kwargs["runtime"] = DockerRunOptions(
            image=values["image"],
            cpuset_cpus=values["cpuset_cpus"],
            memory=values["memory"],
            shm_size=values["shm_size"] or "1g",
            gpus=values["gpus"],
            network=values["network"] or "host",
            mounts=tuple(values["mounts"]),
        )
        return f(*args, **kwargs)

    options = [
        click.option(
            "--runtime",
            type=click.Choice(["local", "docker"]),
            default="local",
            show_default=True,
            envvar="TRAINBENCH_RUNTIME",
            help="Run the rank on the host, or inside the workload's image (the result is written on the host).",
        ),
        click.option("--image", help="[docker] Image to run instead of the workload spec's image."),
        click.option("--cpuset-cpus", metavar="CPUS", help="[docker] CPUs the container may use, e.g. 0-3."),
        click.option("--memory", metavar="SIZE", help="[docker] Memory limit of the container, e.g. 8g."),
        click.option("--shm-size", metavar="SIZE", help="[docker] Size of /dev/shm [default: 1g]."),
        click.option("--gpus", help="[docker] GPUs: all, a count, or device=0,1 [default: all for GPU workloads]."),
        click.option("--network", help="[docker] Container network [default: host]."),
        click.option(
            "--mount",
            "mounts",
            multiple=True,
            type=click.Path(path_type=Path),
            help="[docker] Host path mounted read-only at the same path (repeatable); data_dir is mounted for you.",
        ),
    ]
    for option in reversed(options):
        wrapped = option(wrapped)
    return wrapped
