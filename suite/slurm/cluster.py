"""The demo Slurm cluster: ``make slurm-up`` / ``make slurm-down`` (a controller and N compute nodes in containers).

``up`` builds (or reuses) the node image, writes a munge key and two copies of
slurm.conf into the state directory (:func:`suite.slurm.conf.state_dir`, outside the
repository), starts one container per node on a new bridge network, starts a munged
on this host with the cluster's key on a socket of its own, and waits until every
node is idle. Jobs are then submitted from this host (``sbatch``), with the host's
copy of slurm.conf, which trainbench finds by itself (:func:`suite.slurm.client.config_path`).

The shared filesystem: every ``shared`` directory (by default the checkout's
``results/``) is mounted read-write at the same path on every compute node, as a real
cluster shares a filesystem between its login and compute nodes. A run's output
directory must be under one of them; on a real cluster, under a shared filesystem.

``down`` stops the host munged and removes the containers, the network (found by
label, even without the state) and the state; nothing is left behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

from suite.containers import slurm_cluster as docker_side
from suite.containers.engine import ContainerError, connect
from suite.slurm.client import SlurmClient
from suite.slurm.conf import (
    DEFAULT_CLUSTER,
    WORKLOAD_IMAGE,
    ClusterLayout,
    host_conf,
    munge_dir,
    slurm_conf,
    state_dir,
    state_root,
)
from suite.slurm.errors import ClusterError, SlurmError

NODE_PYTHON = "/opt/trainbench/bin/python"
"""The interpreter with trainbench installed in the node image."""
READY_TIMEOUT_S = 90.0
"""Seconds to wait for every node to report idle after the containers start."""
KEY_BYTES = 1024

Log = Callable[[str], None]


@dataclass
class Cluster:
    """A running demo cluster, as ``cluster.json`` in its state directory records it.

    Attributes:
        name: the cluster's name; controller: its host name; nodes: the compute nodes' host names.
        containers: host name -> container name; network: the docker network.
        image: the node image's id; addresses: host name -> IP address on the network.
        shared: directories mounted at the same path on every compute node.
        python: the nodes' interpreter with trainbench; cpus_per_node: CPUs each node offers.
        munge_dir: the host munged's directory; conf: the host's slurm.conf.
        start_s: seconds ``up`` took.
    """

    name: str
    controller: str
    nodes: list[str]
    containers: dict[str, str]
    network: str
    image: str
    addresses: dict[str, str]
    shared: list[str]
    python: str
    cpus_per_node: int
    munge_dir: str
    conf: str
    start_s: float = 0.0

    def client(self) -> SlurmClient:
        """A client that submits to this cluster."""
        return SlurmClient(Path(self.conf))


def load(name: str = DEFAULT_CLUSTER) -> Cluster | None:
    """The cluster ``name`` as its state records it, or None when it is not up."""
    path = state_dir(name) / "cluster.json"
    try:
        return Cluster(**json.loads(path.read_text()[:1_000_000]))
    except (OSError, ValueError, TypeError):
        return None


def for_conf(conf: Path | None) -> Cluster | None:
    """The demo cluster whose host slurm.conf is ``conf`` (e.g. :func:`suite.slurm.client.config_path`), or None.

    A run submitted to a demo cluster takes the nodes' interpreter (:attr:`Cluster.python`) and
    checks its output directory against :attr:`Cluster.shared` from it.
    """
    if conf is None or conf.name != "slurm.conf" or conf.parent.parent != state_root():
        return None
    found = load(conf.parent.name)
    return found if found is not None and Path(found.conf) == conf else None


def unshared(cluster: Cluster, path: Path) -> str | None:
    """None when ``path`` is under one of the cluster's shared directories, else what to do about it."""
    resolved = path.resolve()
    if any(resolved == Path(d) or Path(d) in resolved.parents for d in cluster.shared):
        return None
    return (
        f"{path} is not on the cluster's shared filesystem, so its nodes cannot read the job or write the ranks' "
        f"records: use an output directory under {' or '.join(cluster.shared)}, or restart the cluster with "
        "`make slurm-down slurm-up SLURM_SHARED=DIR`"
    )


def _host_tools() -> None:
    missing = [tool for tool in ("munged", "sbatch", "scontrol") if shutil.which(tool) is None]
    if os.path.exists("/usr/sbin/munged") and "munged" in missing:
        missing.remove("munged")
    if missing:
        raise ClusterError(
            f"{', '.join(missing)} not found: this host submits the jobs, so it needs the Slurm client and munge "
            "(Debian/Ubuntu: apt-get install slurm-client munge)"
        )


def _cpusets(nodes: int, cpus_per_node: int | None) -> tuple[int, list[str | None]]:
    """CPUs per node and each node's cpuset: the host's CPUs split evenly when there are enough."""
    cpus = sorted(os.sched_getaffinity(0))
    if cpus_per_node is None:
        cpus_per_node = max(1, len(cpus) // nodes)
    if cpus_per_node * nodes > len(cpus):
        return cpus_per_node, [None] * nodes  # more CPUs asked than the host has: the nodes share them
    return cpus_per_node, [
        ",".join(str(c) for c in cpus[i * cpus_per_node : (i + 1) * cpus_per_node]) for i in range(nodes)
    ]


def _start_munged(directory: Path, key: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o755)
    munged = shutil.which("munged") or "/usr/sbin/munged"
    args = [f"--socket={directory}/munge.socket.2", f"--key-file={key}", f"--pid-file={directory}/munged.pid"]
    args += [f"--log-file={directory}/munged.log", f"--seed-file={directory}/munged.seed"]
    proc = subprocess.run([munged, *args], capture_output=True, text=True, timeout=30)
    if proc.returncode != 0:
        raise ClusterError(f"the host's munged did not start: {proc.stderr.strip() or proc.stdout.strip()}")


def _stop_munged(directory: Path) -> str | None:
    """Stop the munged whose pid file is in ``directory`` (only if that process is munged); say what was stopped."""
    try:
        pid = int((directory / "munged.pid").read_text().strip())
        proc = psutil.Process(pid)
        if "munged" not in proc.name() or str(directory) not in " ".join(proc.cmdline()):
            return None
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
    except (OSError, ValueError, psutil.Error):
        return None
    return f"host munged (pid {pid})"


def _wait_ready(cluster: Cluster, client: SlurmClient, deadline: float) -> None:
    states: dict[str, str] = {}
    while time.monotonic() < deadline:
        with contextlib.suppress(SlurmError):
            states = client.node_states()
            if states and all(states.get(n, "").startswith("idle") for n in cluster.nodes):
                return
        time.sleep(0.25)
    engine = connect()
    logs = "\n".join(f"--- {c} ---\n{docker_side.container_logs(engine, c, 15)}" for c in cluster.containers.values())
    raise ClusterError(f"the Slurm nodes did not become idle within {READY_TIMEOUT_S:.0f} s ({states}):\n{logs}")


def up(
    name: str = DEFAULT_CLUSTER,
    nodes: int = 2,
    shared: list[Path] | None = None,
    cpus_per_node: int | None = None,
    log: Log = print,
    workload_image: str = WORKLOAD_IMAGE,
) -> Cluster:
    """Start the demo cluster (or return it when it is already up); see the module docstring.

    Args:
        name: the cluster's name (containers, network and state are named after it).
        nodes: compute nodes (>= 1).
        shared: directories mounted read-write at the same path on every node (created if missing).
        cpus_per_node: CPUs per node; default: the host's CPUs split evenly.
        log: receives progress lines.
        workload_image: the image the nodes extend (default ``trainbench-gpu``: torch, Horovod, numactl).

    Raises:
        ClusterError: the host lacks the Slurm client or munge, or the cluster did not come up
            (then everything started is removed again).
        suite.containers.engine.ContainerError: no Docker engine, no workload image, or a failed build.
    """
    if nodes < 1:
        raise ClusterError(f"a cluster needs at least one compute node, not {nodes}")
    running = load(name)
    engine = connect()
    if running is not None and all(docker_side.running(engine, c) for c in running.containers.values()):
        log(f"Slurm cluster {name} is already up: nodes {', '.join(running.nodes)} (SLURM_CONF={running.conf})")
        return running
    down(name, log=lambda _: None)
    _host_tools()
    start = time.monotonic()
    image = docker_side.build_node_image(engine, lambda t: log(t.rstrip()) if t.strip() else None, workload_image)
    if not image.reused:
        log(f"node image {image.image_id[:19]} built in {image.seconds:.0f} s")
    start_containers = time.monotonic()
    directory, mdir = state_dir(name), munge_dir(name)
    (directory / "node").mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    key = directory / "munge.key"
    key.write_bytes(os.urandom(KEY_BYTES))
    key.chmod(0o600)
    dirs = [p.resolve() for p in (shared if shared is not None else [Path("results")])]
    for d in dirs:
        d.mkdir(parents=True, exist_ok=True)
    per_node, cpusets = _cpusets(nodes, cpus_per_node)
    memory_mb = max(256, psutil.virtual_memory().total // 2**20 // nodes)
    layout = ClusterLayout(name, "ctl", tuple(f"n{i + 1}" for i in range(nodes)), per_node, memory_mb)
    (directory / "node" / "slurm.conf").write_text(slurm_conf(layout))
    base_mounts = {str(directory / "node"): ("/etc/slurm", "ro"), str(key): ("/run/trainbench-slurm/munge.key", "ro")}
    specs = [docker_side.NodeContainer(f"{name}-ctl", "ctl", "controller", None, base_mounts)]
    shared_mounts = {str(d): (str(d), "rw") for d in dirs}
    for host, cpuset in zip(layout.nodes, cpusets, strict=True):
        specs.append(
            docker_side.NodeContainer(f"{name}-{host}", host, "node", cpuset, {**base_mounts, **shared_mounts})
        )
    cluster = Cluster(
        name,
        "ctl",
        list(layout.nodes),
        {c.hostname: c.name for c in specs},
        f"{name}-net",
        image.image_id,
        {},
        [str(d) for d in dirs],
        NODE_PYTHON,
        per_node,
        str(mdir),
        str(host_conf(name)),
    )
    try:
        cluster.addresses = docker_side.start_cluster(engine, name, image.image_id, cluster.network, specs)
        if os.getuid() != 0:
            user = pwd.getpwuid(os.getuid()).pw_name
            for container in cluster.containers.values():
                docker_side.add_user(engine, container, os.getuid(), os.getgid(), user)
        host_conf(name).write_text(slurm_conf(layout, cluster.addresses, f"{mdir}/munge.socket.2"))
        _start_munged(mdir, key)
        _wait_ready(cluster, cluster.client(), time.monotonic() + READY_TIMEOUT_S)
    except (ClusterError, ContainerError, OSError, subprocess.SubprocessError):
        down(name, log=lambda _: None)
        raise
    cluster.start_s = time.monotonic() - start
    (directory / "cluster.json").write_text(json.dumps(asdict(cluster), indent=1))
    log(
        f"Slurm cluster {name} is up in {cluster.start_s:.1f} s ({time.monotonic() - start_containers:.1f} s after "
        f"the image): controller {cluster.addresses['ctl']}, nodes "
        + ", ".join(f"{n} ({cluster.addresses[n]}, {per_node} CPU)" for n in cluster.nodes)
        + f"; shared: {', '.join(cluster.shared)}; SLURM_CONF={cluster.conf}"
    )
    return cluster


def down(name: str = DEFAULT_CLUSTER, log: Log = print) -> list[str]:
    """Stop the host munged, remove the containers, the network and the state; return what was removed.

    Raises:
        suite.containers.engine.ContainerError: no engine, or a container could not be removed.
    """
    removed: list[str] = []
    stopped = _stop_munged(munge_dir(name))
    if stopped:
        removed.append(stopped)
    removed += docker_side.remove_cluster(connect(), name)
    for directory in (state_dir(name), munge_dir(name)):
        if directory.exists():
            shutil.rmtree(directory)
            removed.append(f"state {directory}")
        for parent in directory.parents[: 2 if directory == state_dir(name) else 1]:  # .../trainbench/slurm
            with contextlib.suppress(OSError):
                parent.rmdir()  # only when empty (another cluster may still be up)
    log(f"Slurm cluster {name}: " + ("removed " + ", ".join(removed) if removed else "nothing to remove"))
    return removed
