"""slurm.conf of the demo cluster: what ``make slurm-up`` writes for its nodes and for the submitting host.

Settings verified on this project's machines (shared/ENVIRONMENT.md, "Slurm"): munge
authentication; ``ProctrackType=proctrack/linuxproc`` and ``TaskPlugin=task/none``, so
slurmd runs in an unprivileged container (no cgroup mounts); ``select/cons_tres``; no
accounting storage (so ``sacct`` has nothing: job state comes from ``scontrol``).
``SlurmdTimeout=10`` and ``MessageTimeout=3`` make a dead node NODE_FAIL its job in
about 13 s (measured), ``ReturnToService=2`` returns a restarted node to service, and
``SlurmdParameters=config_overrides`` makes slurmd trust the CPU count written here
(a container limited by a cpuset still sees all of the host's CPUs in /proc).

The nodes' copy names the hosts by name (Docker's DNS resolves them on the cluster's
network). The submitting host's copy adds their addresses (``SlurmctldHost=ctl(IP)``,
``NodeAddr=IP``) and its own munged socket (``AuthInfo=socket=...``); the two copies
differ in nothing else.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

SLURMD_TIMEOUT_S = 10
"""Seconds of silence after which slurmctld marks a node DOWN (and fails its jobs: NODE_FAIL)."""
MESSAGE_TIMEOUT_S = 3
"""Seconds a Slurm message may take before it counts as lost."""
KILL_WAIT_S = 10
"""Seconds between SIGTERM and SIGKILL when a job is cancelled or runs out of time."""


@dataclass(frozen=True)
class ClusterLayout:
    """The demo cluster's shape.

    Attributes:
        cluster_name: Slurm's ClusterName.
        controller: the controller's host name.
        nodes: the compute nodes' host names (= Slurm NodeNames).
        cpus_per_node: CPUs each node offers (its container's cpuset size).
        memory_mb_per_node: memory each node offers, MiB (RealMemory).
        partition: the one (default) partition's name.
    """

    cluster_name: str
    controller: str
    nodes: tuple[str, ...]
    cpus_per_node: int
    memory_mb_per_node: int
    partition: str = "debug"


def slurm_conf(
    layout: ClusterLayout, addresses: Mapping[str, str] | None = None, munge_socket: str | None = None
) -> str:
    """The text of slurm.conf.

    Args:
        layout: the cluster's shape.
        addresses: host name -> IP address (the submitting host's copy), or None (the nodes' copy).
        munge_socket: the munged socket the Slurm commands use, or None for munge's default.

    Raises:
        KeyError: ``addresses`` lacks the controller or a node.
    """
    ctl = layout.controller
    lines = [
        "# The trainbench demo cluster (make slurm-up); written by suite/slurm/conf.py",
        f"ClusterName={layout.cluster_name}",
        f"SlurmctldHost={ctl}({addresses[ctl]})" if addresses else f"SlurmctldHost={ctl}",
        "AuthType=auth/munge",
        "CredType=cred/munge",
    ]
    if munge_socket is not None:
        lines.append(f"AuthInfo=socket={munge_socket}")
    lines += [
        "SlurmUser=root",
        "SlurmdUser=root",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "SchedulerType=sched/backfill",
        "MpiDefault=none",
        "SwitchType=switch/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "StateSaveLocation=/var/spool/slurmctld",
        "SlurmdSpoolDir=/var/spool/slurmd",
        "SlurmctldPidFile=/run/slurmctld.pid",
        "SlurmdPidFile=/run/slurmd.pid",
        "SlurmdParameters=config_overrides",
        "ReturnToService=2",
        "JobRequeue=0",
        f"SlurmdTimeout={SLURMD_TIMEOUT_S}",
        f"MessageTimeout={MESSAGE_TIMEOUT_S}",
        f"KillWait={KILL_WAIT_S}",
        "InactiveLimit=0",
    ]
    for node in layout.nodes:
        addr = f" NodeAddr={addresses[node]}" if addresses else ""
        lines.append(
            f"NodeName={node}{addr} CPUs={layout.cpus_per_node} RealMemory={layout.memory_mb_per_node} State=UNKNOWN"
        )
    lines.append(f"PartitionName={layout.partition} Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


WORKLOAD_IMAGE = "trainbench-gpu:latest"
"""The image the demo cluster's nodes extend: torch, Horovod (Gloo, NCCL), numactl; numa-ddp and the Horovod workloads
run in it."""
DEFAULT_CLUSTER = "trainbench-slurm"
"""The demo cluster's name (containers ``<name>-ctl``, ``<name>-n1``, ...; network ``<name>-net``)."""


def state_root() -> Path:
    """Where demo clusters keep their state: ``$XDG_STATE_HOME/trainbench/slurm`` (default ~/.local/state/...)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "trainbench" / "slurm"


def state_dir(cluster: str = DEFAULT_CLUSTER) -> Path:
    """The state directory of demo cluster ``cluster`` (its slurm.conf copies, munge key, cluster.json)."""
    return state_root() / cluster


def host_conf(cluster: str = DEFAULT_CLUSTER) -> Path:
    """The submitting host's slurm.conf of demo cluster ``cluster`` (exists while the cluster is up)."""
    return state_dir(cluster) / "slurm.conf"


def munge_dir(cluster: str = DEFAULT_CLUSTER) -> Path:
    """The host munged's directory (socket, pid, log): munged wants every parent directory of its
    socket searchable by all users, which a home directory (0700) is not, so it is under /run for
    root and /tmp otherwise."""
    uid = os.getuid()
    root = Path("/run/trainbench-slurm") if uid == 0 else Path(f"/tmp/trainbench-slurm-{uid}")
    return root / cluster
