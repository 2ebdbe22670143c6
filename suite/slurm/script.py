"""The sbatch script of a run: the same rank command as a local run, started on every node with ``srun``.

One script per launcher, all from the rank command the local launch plan
(:func:`suite.launch.plan_launch`) builds:

- ``inline`` / ``run_cpu``: one rank, ``srun --ntasks=1`` on the job's one node;
- ``torchrun``: one torchrun agent per node (``srun --ntasks-per-node=1``), rendezvous
  c10d on the first node of ``scontrol show hostnames $SLURM_JOB_NODELIST``,
  ``--nnodes=$SLURM_NNODES``, ``--nproc-per-node`` = ranks per node, the job id as the
  rendezvous id; torchrun sets RANK/WORLD_SIZE/LOCAL_RANK;
- ``horovodrun``: Horovod over Gloo without ssh: Horovod's own rendezvous server runs as a
  one-task step on the first node and every rank as a task of one ``srun`` step
  (:mod:`suite.slurm.horovod_gloo` sets each task's HOROVOD_* slot from SLURM_*); Gloo carries
  the CPU collectives and the rendezvous, NCCL (compiled into the image's Horovod) the GPU ones.

Every step runs in the Pyxis container when ``container_image`` is set (``srun
--container-image``), with the run directory mounted at the same path. The job's log
goes to ``<run dir>/slurm-<job id>.out``; the first step checks that every node sees the
run directory, so an output directory that is not on a shared filesystem fails at once
with a message that says so.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

from suite import __version__
from suite.slurm.errors import SlurmError
from suite.slurm.options import SlurmOptions

PORT_BASE = 20000
"""The rendezvous port is PORT_BASE + job id mod PORT_SPAN, so jobs sharing a node differ."""
PORT_SPAN = 20000
LAUNCHERS = ("inline", "run_cpu", "torchrun", "horovodrun")


class Shell(str):
    """A script token that the shell must expand (written as is, never quoted)."""

    __slots__ = ()


PY = Shell('"$PY"')
"""The nodes' Python interpreter in a command (the script sets PY once)."""


@dataclass(frozen=True)
class RankCommand:
    """What each rank runs, whatever starts it.

    Attributes:
        launcher: ``inline``, ``run_cpu``, ``torchrun`` or ``horovodrun``.
        rank_args: the rank's arguments after the interpreter: ``-m workloads.rank --job ... --out ...``.
        head: for inline/run_cpu, the argv before ``rank_args``, with :data:`PY` for the interpreter
            (e.g. a numactl binding, or ``PY -m torch.backends.xeon.run_cpu ... --no-python PY``).
        env: variables every rank gets (OpenMP settings, MALLOC_CONF); no host paths.
        allocator: the allocator to preload (``default``, ``jemalloc``, ``tcmalloc``), found on each
            node by :mod:`suite.slurm.node_env`, since its path there may differ from this host's.
    """

    launcher: str
    rank_args: tuple[str, ...]
    head: tuple[str, ...] = (PY,)
    env: dict[str, str] = field(default_factory=dict)
    allocator: str = "default"


def rank_command(
    command: list[str], launcher: str, env: dict[str, str], python: str = sys.executable, allocator: str = "default"
) -> RankCommand:
    """The :class:`RankCommand` of a local launch plan (``plan.command``, ``plan.launcher``, ``plan.env_set``).

    The plan should be made with ``allocator=default`` and the wanted allocator passed
    here: a plan's ``LD_PRELOAD`` names a library path of this host.

    Raises:
        SlurmError: the command does not run ``-m workloads.rank``, or the launcher is unknown.
    """
    if launcher not in LAUNCHERS:
        raise SlurmError(f"launcher {launcher!r} cannot run under Slurm; launchers: {', '.join(LAUNCHERS)}")
    try:
        i = next(i for i in range(1, len(command)) if command[i - 1 : i + 1] == ["-m", "workloads.rank"])
    except StopIteration:
        raise SlurmError(f"not a rank command (no '-m workloads.rank'): {shlex.join(command)}") from None
    head = tuple(PY if arg == python else arg for arg in command[: i - 1])
    head = head if launcher in ("inline", "run_cpu") else (PY,)
    return RankCommand(launcher, tuple(command[i - 1 :]), head, env, allocator)


def _line(tokens: list[str]) -> str:
    return " ".join(t if isinstance(t, Shell) else shlex.quote(t) for t in tokens)


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


def _steps(options: SlurmOptions, rank: RankCommand, run_dir: Path) -> list[str]:
    container = _container(options, run_dir)
    srun = ["srun", "--export=ALL", "--kill-on-bad-exit=1", *container]
    k = options.ntasks_per_node
    preload = _preload(rank)
    if rank.launcher in ("inline", "run_cpu"):
        if options.ntasks != 1:
            raise SlurmError(
                f"launcher {rank.launcher} starts one rank, but the job asks for {options.nodes} node(s) x {k} "
                "rank(s); use --nodes 1 --ntasks-per-node 1, or a distributed workload (torchrun, horovodrun)"
            )
        return [_line([*srun, "--ntasks=1", *preload, *rank.head, *rank.rank_args])]
    if rank.launcher == "torchrun":
        cpus = [f"--cpus-per-task={k * options.cpus_per_task}"] if options.cpus_per_task else []
        torchrun = [
            PY,
            "-m",
            "torch.distributed.run",
            Shell('--nnodes="$SLURM_NNODES"'),
            f"--nproc-per-node={k}",
            "--rdzv-backend=c10d",
            Shell('--rdzv-endpoint="$HEAD:$PORT"'),
            Shell('--rdzv-id="$SLURM_JOB_ID"'),
        ]
        step = [*srun, Shell('--ntasks="$SLURM_NNODES"'), "--ntasks-per-node=1", *cpus, "--label"]
        return [_line([*step, *preload, *torchrun, *rank.rank_args])]
    hvd = [PY, "-m", "suite.slurm.horovod_gloo"]
    rank_cmd = [*preload, PY, *rank.rank_args]
    server = [*srun, "--overlap", "--nodes=1", "--ntasks=1", Shell('--nodelist="$HEAD"'), *hvd, "serve"]
    slots = [*srun, "--overlap", Shell('--ntasks="$SLURM_NTASKS"'), f"--ntasks-per-node={k}", "--label"]
    return [
        f'HOSTS=$(printf "%s:{k}\\n" $NODES | paste -sd, -)',
        "# Horovod's rendezvous server; its log (and srun's notes when it is stopped) go to hvd-rendezvous.log",
        _line([*server, Shell('--port="$PORT"'), Shell('--hosts="$HOSTS"')]) + " >hvd-rendezvous.log 2>&1 &",
        "SERVER=$!",
        _line([*slots, *hvd, "slot", Shell('--rendezvous="$HEAD:$PORT"'), Shell('--hosts="$HOSTS"'), "--", *rank_cmd]),
        "code=$?",
        'kill "$SERVER" 2>/dev/null',
        'wait "$SERVER" 2>/dev/null',
        'exit "$code"',
    ]


def sbatch_script(options: SlurmOptions, rank: RankCommand, run_dir: Path, title: str = "trainbench run") -> str:
    """The batch script that runs ``rank`` on the job's nodes (text; ``--dry-run`` prints it).

    Args:
        options: the job's options.
        rank: the rank command (:func:`rank_command`).
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
        _line(["srun", "--export=ALL", "--ntasks-per-node=1", Shell('--ntasks="$SLURM_NNODES"'), "--overlap"])
        + f" bash -c {shlex.quote(check)} {shlex.quote(str(run_dir))} || exit 2",
        *_steps(options, rank, run_dir),
    ]
    return "\n".join([*_header(options, run_dir, title), *body, ""])
