"""``horovodrun``: data-parallel ranks started by Horovod's own launcher over Gloo.

On this host: ``horovodrun --gloo -np N -H hosts`` (other hosts reached over ssh). Under
Slurm: Horovod over Gloo without ssh: Horovod's rendezvous server runs as a one-task step on
the job's first node and every rank as a task of one ``srun`` step (:mod:`suite.slurm.horovod_gloo`
sets each task's HOROVOD_* slot from SLURM_*); Gloo carries the CPU collectives and the
rendezvous, NCCL (compiled into the image's Horovod) the GPU ones.
"""

from __future__ import annotations

import importlib.util
import socket
from typing import Literal

from pydantic import Field

from suite.launchers.base import LaunchBase, LaunchError, LaunchPlan, RankStart, SrunStep
from suite.launchers.srun import PY, Shell, line

LOCAL_HOSTS = ("localhost", "127.0.0.1")


class HorovodrunLaunch(LaunchBase):
    """Data-parallel ranks started by ``horovodrun --gloo`` (Horovod's own launcher)."""

    launcher: Literal["horovodrun"] = "horovodrun"
    nproc_per_node: int | None = Field(
        None,
        ge=1,
        le=1024,
        description="horovodrun: ranks on this host (default: one per visible GPU, or 1)",
    )
    hosts: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9_.-]+:[0-9]+(,[A-Za-z0-9_.-]+:[0-9]+)*$",
        description="horovodrun: -H host:slots,... (default localhost:nproc_per_node); other hosts are "
        "reached over ssh by horovodrun and must hold the same image or checkout",
    )

    def ranks_per_host(self) -> int | None:
        """``nproc_per_node``."""
        return self.nproc_per_node

    def hosts_arg(self, gpu_count: int) -> tuple[int, str]:
        """``(np, -H value)`` for horovodrun.

        Without ``hosts``: ``nproc_per_node`` ranks (default one per visible GPU, else 1)
        on ``localhost``. With ``hosts``: their slots summed; the first host must be this
        one, because global rank 0 (which writes the result) runs on the first host.

        Raises:
            LaunchError: the first host is another machine, or nproc_per_node exceeds the slots.
        """
        if self.hosts is None:
            n = self.nproc_per_node if self.nproc_per_node is not None else max(1, gpu_count)
            return n, f"localhost:{n}"
        entries = [h.rsplit(":", 1) for h in self.hosts.split(",")]
        first = entries[0][0]
        if first not in (*LOCAL_HOSTS, socket.gethostname()):
            raise LaunchError(
                f"hosts={self.hosts}: the first host must be this machine (localhost or {socket.gethostname()}), "
                "where global rank 0 writes the result"
            )
        total = sum(int(slots) for _, slots in entries)
        if self.nproc_per_node is not None and self.nproc_per_node > int(entries[0][1]):
            raise LaunchError(
                f"nproc_per_node={self.nproc_per_node} exceeds this host's {entries[0][1]} slots in hosts"
            )
        return total, self.hosts

    def check_local(self, start: RankStart) -> None:
        """Horovod must be installed where the ranks run.

        Raises:
            LaunchError: ``horovod`` cannot be imported here.
        """
        if importlib.util.find_spec("horovod") is None:
            raise LaunchError(
                "this workload is launched by horovodrun, but Horovod is not installed in this environment; "
                "run it in its image (--runtime docker; build it with `make images`), or use --set engine=ddp"
            )

    def local_plan(self, start: RankStart, env: dict[str, str]) -> LaunchPlan:
        """``python -m horovod.runner.launch --gloo -np N -H HOSTS python -m workloads.rank ...``.

        Raises:
            LaunchError: see :meth:`hosts_arg`.
        """
        np_, hosts = self.hosts_arg(start.gpus)
        cmd = [start.python, "-m", "horovod.runner.launch", "--gloo", "-np", str(np_), "-H", hosts, start.python]
        return LaunchPlan(command=[*cmd, *start.args], env_set=env, launcher=self.launcher, processes=np_)

    def for_slurm(self, nodes: int, ranks_per_node: int) -> LaunchBase:
        """``nproc_per_node`` = the job's ranks per node.

        Raises:
            LaunchError: ``hosts`` is set (the job's nodes are the hosts).
        """
        if self.hosts is not None:
            raise LaunchError(f"hosts={self.hosts}: under Slurm the job's nodes are the hosts; drop hosts")
        return self.model_copy(update={"nproc_per_node": ranks_per_node})

    def slurm_steps(self, step: SrunStep) -> list[str]:
        """Horovod's rendezvous server on the first node, then every rank as a task of one srun step."""
        k = step.ranks_per_node
        hvd = [PY, "-m", "suite.slurm.horovod_gloo"]
        rank_cmd = [*step.preload, PY, *step.rank_args]
        server = [*step.srun, "--overlap", "--nodes=1", "--ntasks=1", Shell('--nodelist="$HEAD"'), *hvd, "serve"]
        slots = [*step.srun, "--overlap", Shell('--ntasks="$SLURM_NTASKS"'), f"--ntasks-per-node={k}", "--label"]
        return [
            f'HOSTS=$(printf "%s:{k}\\n" $NODES | paste -sd, -)',
            "# Horovod's rendezvous server; its log (and srun's notes when it is stopped) go to hvd-rendezvous.log",
            line([*server, Shell('--port="$PORT"'), Shell('--hosts="$HOSTS"')]) + " >hvd-rendezvous.log 2>&1 &",
            "SERVER=$!",
            line(
                [*slots, *hvd, "slot", Shell('--rendezvous="$HEAD:$PORT"'), Shell('--hosts="$HOSTS"'), "--", *rank_cmd]
            ),
            "code=$?",
            'kill "$SERVER" 2>/dev/null',
            'wait "$SERVER" 2>/dev/null',
            'exit "$code"',
        ]
