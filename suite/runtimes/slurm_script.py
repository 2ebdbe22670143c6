"""The sbatch script of a run: the same rank as a local run, started on the job's nodes by its launcher's Slurm plan.

The script sets the nodes' interpreter and the ranks' environment, finds the job's nodes
and the rendezvous port, checks that every node sees the run directory, then runs the steps
of the launcher's Slurm plan (:meth:`suite.launchers.base.LaunchBase.slurm_steps`: one task for
``inline``/``run_cpu``, one torchrun agent per node, or Horovod's rendezvous server and one task
per rank). Every step runs in the Pyxis container when ``container_image`` is set (``srun
--container-image``), with the run directory mounted at the same path. The job's log goes to
``<run dir>/slurm-<job id>.out``; an output directory that is not on a shared filesystem
fails at once with a message that says so.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

from suite import __version__
from suite.launchers import LaunchBase, rank_args
from suite.launchers.base import SrunStep
from suite.launchers.srun import PY, Shell, line
from suite.slurm.errors import SlurmError
from suite.slurm.options import SlurmOptions

PORT_BASE = 20000
"""The rendezvous port is PORT_BASE + job id mod PORT_SPAN, so jobs sharing a node differ."""
PORT_SPAN = 20000


@dataclass(frozen=True)
class RankCommand:
    """What each rank of the job runs, whatever starts it.

    Attributes:
        launch: the launcher's settings as the job runs them (its Slurm plan starts the ranks).
        rank_args: the rank's arguments after the interpreter: ``-m workloads.rank --job ... --out ...``.
        env: variables every rank gets (OpenMP settings, MALLOC_CONF); no host paths.
        allocator: the allocator to preload (``default``, ``jemalloc``, ``tcmalloc``), found on each
            node by :mod:`suite.slurm.node_env`, since its path there may differ from this host's
            (or the node may lack it): a Slurm plan is written for the nodes, not for this host.
    """

    launch: LaunchBase
    rank_args: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    allocator: str = "default"


def job_rank(launch: LaunchBase, run_dir: Path, env: dict[str, str]) -> RankCommand:
    """The :class:`RankCommand` of a job whose run directory is ``run_dir`` (job, measurement, progress there)."""
    args = rank_args(run_dir / "job.json", run_dir / "measurement.json", run_dir / "progress.jsonl")
    return RankCommand(launch, tuple(args), env, launch.allocator)


def node_python(options: SlurmOptions) -> str:
    """The interpreter the nodes run: the option, else ``python`` in a container image, else this one."""
    return options.python or ("python" if options.container_image else sys.executable)


def _container(options: SlurmOptions, run_dir: Path) -> list[str]:
    if options.container_image is None:
        return []
    mounts = ",".join([f"{run_dir}:{run_dir}", *options.container_mounts])
    return [
        f"--container-image={options.container_image}",
        f"--container-mounts={mounts}",
        f"--container-workdir={run_dir}",
    ]


def _header(options: SlurmOptions, run_dir: Path, title: str) -> list[str]:
    directives = [
        f"--job-name={options.job_name}",
        f"--nodes={options.nodes}",
        f"--ntasks-per-node={options.ntasks_per_node}",
    ]
    for flag, value in (
        ("--cpus-per-task", options.cpus_per_task),
        ("--partition", options.partition),
        ("--time", options.time),
        ("--account", options.account),
        ("--gpus-per-node", options.gpus_per_node),
    ):
        if value is not None:
            directives.append(f"{flag}={value}")
    # --no-requeue: Slurm requeues a batch job whose node failed by default, and a rerun would start the
    # measurement again over the first one's files; the run fails instead (NODE_FAIL) and keeps its steps.
    directives += [f"--output={run_dir}/slurm-%j.out", f"--chdir={run_dir}", "--export=NONE", "--no-requeue"]
    directives += options.sbatch_args
    return [
        "#!/bin/bash",
        f"# {title}",
        f"# Written by trainbench {__version__}; submit with: sbatch {run_dir}/job.sbatch",
        *(f"#SBATCH {d}" for d in directives),
        "",
    ]


def _preload(rank: RankCommand) -> list[str]:
    """The node-side allocator lookup that starts the rank's process (nothing for the default allocator)."""
    if rank.allocator == "default":
        return []
    return [PY, "-m", "suite.slurm.node_env", f"--allocator={rank.allocator}", "--"]


def _layout(options: SlurmOptions, rank: RankCommand) -> None:
    """Refuse a job of more than one rank for a launcher that starts one.

    Raises:
        SlurmError: the launcher starts one rank, the job asks for more.
    """
    if rank.launch.starts_one_rank and options.ntasks != 1:
        raise SlurmError(
            f"launcher {rank.launch.launcher} starts one rank, but the job asks for {options.nodes} node(s) x "
            f"{options.ntasks_per_node} rank(s); use --nodes 1 --ntasks-per-node 1, or a distributed workload "
            "(torchrun, horovodrun)"
        )


def _steps(options: SlurmOptions, rank: RankCommand, run_dir: Path) -> list[str]:
    _layout(options, rank)
    srun = ["srun", "--export=ALL", "--kill-on-bad-exit=1", *_container(options, run_dir)]
    step = SrunStep(
        srun, options.nodes, options.ntasks_per_node, options.cpus_per_task, _preload(rank), list(rank.rank_args)
    )
    return rank.launch.slurm_steps(step)


def sbatch_script(options: SlurmOptions, rank: RankCommand, run_dir: Path, title: str = "trainbench run") -> str:
    """The batch script that runs ``rank`` on the job's nodes (text; ``--dry-run`` prints it).

    Args:
        options: the job's options.
        rank: the rank command (:func:`job_rank`).
        run_dir: the run directory (absolute; holds the job file; must be on a shared filesystem).
        title: a comment line naming the run (e.g. ``numa-ddp (quick): 2 node(s) x 1 rank(s)``).

    Raises:
        SlurmError: the launcher cannot use the requested layout, or ``run_dir`` is relative.
    """
    if not run_dir.is_absolute():
        raise SlurmError(f"run directory {run_dir} must be absolute (the nodes resolve it on their own)")
    check = (
        '[ -d "$0" ] || { echo "trainbench: node $(hostname) does not see the run directory $0: the output '
        'directory must be on a filesystem shared by the submitting host and every node" >&2; exit 2; }'
    )
    body = [
        "set -uo pipefail",
        f"PY={shlex.quote(node_python(options))}",
        *(f"export {k}={shlex.quote(v)}" for k, v in sorted(rank.env.items())),
        'NODES=$(scontrol show hostnames "$SLURM_JOB_NODELIST")',
        'HEAD=$(printf "%s\\n" $NODES | head -n 1)',
        f"PORT=$(({PORT_BASE} + SLURM_JOB_ID % {PORT_SPAN}))",
        'echo "trainbench: job $SLURM_JOB_ID on $SLURM_JOB_NODELIST ($SLURM_NNODES node(s)), rendezvous $HEAD:$PORT"',
        "# every node must see the run directory (a shared filesystem)",
        line(["srun", "--export=ALL", "--ntasks-per-node=1", Shell('--ntasks="$SLURM_NNODES"'), "--overlap"])
        + f" bash -c {shlex.quote(check)} {shlex.quote(str(run_dir))} || exit 2",
        *_steps(options, rank, run_dir),
    ]
    return "\n".join([*_header(options, run_dir, title), *body, ""])
