"""``python -m suite.slurm up|down|status``: the demo Slurm cluster from the command line (``make slurm-up``)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from suite.containers.engine import ContainerError, connect
from suite.containers.slurm_cluster import WORKLOAD_IMAGE, build_node_image
from suite.slurm import cluster as demo
from suite.slurm.conf import DEFAULT_CLUSTER
from suite.slurm.errors import SlurmError


def _fail(exc: SlurmError | ContainerError) -> None:
    click.echo(f"error: {exc}", err=True)
    sys.exit(exc.exit_code)


@click.group(name="slurm")
def slurm() -> None:
    """The demo Slurm cluster: a controller and compute nodes in containers, submitted to from this host."""


@slurm.command()
@click.option("--name", default=DEFAULT_CLUSTER, show_default=True, help="cluster name (containers, network, state)")
@click.option("--nodes", type=click.IntRange(1, 64), default=2, show_default=True, help="compute nodes")
@click.option(
    "--shared",
    type=click.Path(file_okay=False, path_type=Path),
    multiple=True,
    help="directory mounted at the same path on every node (the runs' output directory); default ./results",
)
@click.option("--cpus-per-node", type=click.IntRange(1, 4096), help="CPUs per node (default: the host's split evenly)")
@click.option(
    "--workload-image",
    default=WORKLOAD_IMAGE,
    show_default=True,
    help="the image the nodes extend (torch, Horovod, numactl)",
)
def up(name: str, nodes: int, shared: tuple[Path, ...], cpus_per_node: int | None, workload_image: str) -> None:
    """Start the cluster (build or reuse its node image first); prints how long it took."""
    try:
        demo.up(name, nodes, list(shared) or None, cpus_per_node, log=click.echo, workload_image=workload_image)
    except (SlurmError, ContainerError) as exc:
        _fail(exc)


@slurm.command()
@click.option("--workload-image", default=WORKLOAD_IMAGE, show_default=True, help="the image the nodes extend")
@click.option("--force", is_flag=True, help="build even when an image with the same inputs exists")
def image(workload_image: str, force: bool) -> None:
    """Build (or reuse) the nodes' image only, and print how long it took (CI's separate stage)."""
    try:
        built = build_node_image(connect(), lambda t: click.echo(t, nl=False), workload_image, force)
    except ContainerError as exc:
        _fail(exc)
    how = "reused" if built.reused else f"built in {built.seconds:.0f} s"
    click.echo(f"{built.tags[0]} {built.image_id[:19]}: {how} ({built.size_bytes / 2**30:.2f} GiB)")


@slurm.command()
@click.option("--name", default=DEFAULT_CLUSTER, show_default=True)
def down(name: str) -> None:
    """Remove the cluster: containers, network, state and the host's munged."""
    try:
        demo.down(name, log=click.echo)
    except (SlurmError, ContainerError) as exc:
        _fail(exc)


@slurm.command()
@click.option("--name", default=DEFAULT_CLUSTER, show_default=True)
def status(name: str) -> None:
    """Show the cluster's nodes and their states (exit 1 when it is not up)."""
    found = demo.load(name)
    if found is None:
        click.echo(f"Slurm cluster {name} is not up (start it with `make slurm-up`)")
        sys.exit(1)
    try:
        states = found.client().node_states()
    except SlurmError as exc:
        _fail(exc)
    click.echo(f"cluster {name}: SLURM_CONF={found.conf}; shared: {', '.join(found.shared)}")
    for node in found.nodes:
        click.echo(f"  {node} {found.addresses.get(node, '?')} {states.get(node, 'unknown')}")
