"""Options shared by several commands: ``--runtime`` and its docker and Slurm options, as one typed runtime.

The runtime says where the rank runs, whatever its launcher: on the host
(:class:`suite.runtimes.local.LocalRuntime`), inside the workload's image
(:class:`suite.runtimes.docker.DockerRuntime`), or as a Slurm job on a cluster's nodes
(:class:`suite.runtimes.slurm.SlurmRuntime`, ``trainbench run`` only). A command decorated
with :func:`runtime_options` receives one ``runtime: Runtime`` argument, which goes into
``RunOptions.runtime``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from pydantic import ValidationError

from suite.console import warn
from suite.runtimes.docker import DockerRuntime
from suite.runtimes.docker_args import DockerRunOptions
from suite.runtimes.local import LocalRuntime
from suite.runtimes.slurm import SlurmRuntime
from suite.slurm.options import SlurmOptions


def tracking_options(logged: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--tracking-uri`` (default ``$MLFLOW_TRACKING_URI``, else ``sqlite:///mlflow.db`` here) and
    ``--no-tracking`` for a command whose ``logged`` (e.g. "the result JSON") is written either way."""
    uri = click.option(
        "--tracking-uri",
        envvar="MLFLOW_TRACKING_URI",
        help="MLflow tracking URI [default: sqlite:///mlflow.db in the current directory].",
    )
    off = click.option("--no-tracking", is_flag=True, help=f"Do not log to MLflow ({logged} still written).")
    return lambda command: uri(off(command))


Runtime = LocalRuntime | DockerRuntime | SlurmRuntime
"""Where the ranks run: one typed variant per runtime (:mod:`suite.runtimes`)."""


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


_SLURM_ONLY = {
    "nodes": "--nodes",
    "ntasks_per_node": "--ntasks-per-node",
    "cpus_per_task": "--cpus-per-task",
    "partition": "--partition",
    "time": "--time",
    "account": "--account",
    "gpus_per_node": "--gpus-per-node",
    "sbatch_args": "--sbatch-arg",
    "container_image": "--container-image",
    "container_mounts": "--container-mount",
    "queue_timeout": "--queue-timeout",
    "dry_run": "--dry-run",
}
"""Parameter name -> flag of the options that apply to ``--runtime slurm`` only."""


def _given(values: dict[str, Any], names: dict[str, str]) -> list[str]:
    return [flag for key, flag in names.items() if values.get(key) not in (None, (), False)]


def _slurm_runtime(values: dict[str, Any]) -> SlurmRuntime:
    """The Slurm runtime from its flags; a value Slurm would refuse is a usage error (exit 2)."""
    fields = {
        "nodes": values["nodes"] or 1,
        "ntasks_per_node": values["ntasks_per_node"] or 1,
        "cpus_per_task": values["cpus_per_task"],
        "partition": values["partition"],
        "time": values["time"],
        "account": values["account"],
        "gpus_per_node": values["gpus_per_node"],
        "sbatch_args": tuple(values["sbatch_args"]),
        "container_image": values["container_image"],
        "container_mounts": tuple(values["container_mounts"]),
        "queue_timeout_s": values["queue_timeout"],
    }
    try:
        options = SlurmOptions.model_validate(fields)
    except ValidationError as exc:
        problems = "; ".join(f"--{str(e['loc'][0]).replace('_', '-')}: {e['msg']}" for e in exc.errors())
        raise click.UsageError(problems) from None
    return SlurmRuntime(options, values["ntasks_per_node"] is not None, bool(values["dry_run"]))


def runtime_options(f: Callable[..., Any] | None = None, *, slurm: bool = False) -> Callable[..., Any]:
    """Add ``--runtime`` and the docker options (with ``slurm``, also ``--launcher slurm`` and the Slurm
    options) to a click command; the command receives them as one ``runtime: Runtime`` argument.
    Options of another runtime than the chosen one are a usage error (exit 2).

    Use as ``@runtime_options`` or ``@runtime_options(slurm=True)``.
    """
    if f is None:
        return functools.partial(runtime_options, slurm=slurm)
    command = f

    @functools.wraps(command)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        names = ("runtime", *_DOCKER_ONLY, *((*_SLURM_ONLY, "launcher") if slurm else ()))
        values = {k: kwargs.pop(k) for k in names}
        runtime = "slurm" if values.get("launcher") == "slurm" else values.pop("runtime")
        if values.get("launcher") == "slurm" and values["runtime"] not in ("local", "slurm"):
            raise click.UsageError(f"--launcher slurm and --runtime {values['runtime']} contradict each other")
        docker_given = _given(values, _DOCKER_ONLY)
        slurm_given = _given(values, _SLURM_ONLY) if slurm else []
        if runtime != "docker" and docker_given:
            verb = "applies" if len(docker_given) == 1 else "apply"
            raise click.UsageError(
                f"{', '.join(docker_given)} {verb} to --runtime docker only (RUNTIME=docker with make)"
            )
        if runtime != "slurm" and slurm_given:
            verb = "applies" if len(slurm_given) == 1 else "apply"
            raise click.UsageError(f"{', '.join(slurm_given)} {verb} to --runtime slurm (or --launcher slurm) only")
        if runtime == "local":
            kwargs["runtime"] = LocalRuntime()
        elif runtime == "slurm":
            kwargs["runtime"] = _slurm_runtime(values)
        else:
            options = DockerRunOptions(
                image=values["image"],
                cpuset_cpus=values["cpuset_cpus"],
                memory=values["memory"],
                shm_size=values["shm_size"] or "1g",
                gpus=values["gpus"],
                network=values["network"] or "host",
                mounts=tuple(values["mounts"]),
            )
            kwargs["runtime"] = DockerRuntime(options=options, warn=warn)
        return command(*args, **kwargs)

    options: list[Callable[[Any], Any]] = [
        click.option(
            "--runtime",
            type=click.Choice(["local", "docker", "slurm"] if slurm else ["local", "docker"]),
            default="local",
            show_default=True,
            envvar="TRAINBENCH_RUNTIME",
            help="Run the rank on the host, inside the workload's image"
            + (", or as a Slurm job on a cluster's nodes" if slurm else "")
            + " (the result is written on the host).",
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
    if slurm:
        options += _slurm_click_options()
    for option in reversed(options):
        wrapped = option(wrapped)
    return wrapped


def _slurm_click_options() -> list[Callable[[Any], Any]]:
    """The ``--launcher slurm`` alias and the job's options (sbatch's names)."""
    count = click.IntRange(1, 100_000)
    return [
        click.option(
            "--launcher",
            type=click.Choice(["slurm"]),
            help="The same as --runtime slurm. (The ranks' own launcher, torchrun or horovodrun, is the workload's.)",
        ),
        click.option("--nodes", type=count, help="[slurm] Nodes of the job [default: 1]."),
        click.option(
            "--ntasks-per-node",
            type=click.IntRange(1, 1024),
            help="[slurm] Ranks per node [default: the workload's nproc_per_node, else 1].",
        ),
        click.option("--cpus-per-task", type=count, help="[slurm] CPUs per rank [default: the partition's]."),
        click.option("--partition", help="[slurm] Partition [default: the cluster's default]."),
        click.option("--time", help="[slurm] Time limit in sbatch's syntax, e.g. 30 or 1:00:00."),
        click.option("--account", help="[slurm] Account charged for the job."),
        click.option("--gpus-per-node", help="[slurm] GPUs per node: N or TYPE:N."),
        click.option(
            "--sbatch-arg",
            "sbatch_args",
            multiple=True,
            metavar="--FLAG[=VALUE]",
            help="[slurm] Another sbatch option as an #SBATCH line (repeatable), e.g. --sbatch-arg=--exclusive.",
        ),
        click.option(
            "--container-image",
            help="[slurm] Run every rank in this image through Pyxis/enroot (srun --container-image), as MLPerf does.",
        ),
        click.option(
            "--container-mount",
            "container_mounts",
            multiple=True,
            metavar="SRC[:DST[:FLAGS]]",
            help="[slurm] Another Pyxis mount (repeatable); the run directory is always mounted.",
        ),
        click.option(
            "--queue-timeout",
            type=click.FloatRange(min=0, min_open=True),
            metavar="SECONDS",
            help="[slurm] Cancel the job if it is still pending after this many seconds [default: wait].",
        ),
        click.option("--dry-run", is_flag=True, help="[slurm] Print the batch script; submit nothing."),
    ]
