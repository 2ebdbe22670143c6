"""The demo Slurm cluster: ``trainbench slurm up|down|status|image`` (``make slurm-up``, ``make slurm-down``)."""

from __future__ import annotations

from pathlib import Path

import click

from suite.errors import RunFailed
from suite.slurm.conf import DEFAULT_CLUSTER, WORKLOAD_IMAGE


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
    from suite.slurm import cluster as demo

    demo.up(name, nodes, list(shared) or None, cpus_per_node, log=click.echo, workload_image=workload_image)


@slurm.command()
@click.option("--workload-image", default=WORKLOAD_IMAGE, show_default=True, help="the image the nodes extend")
@click.option("--force", is_flag=True, help="build even when an image with the same inputs exists")
def image(workload_image: str, force: bool) -> None:
    """Build (or reuse) the nodes' image only, and print how long it took (CI's separate stage)."""
    from suite.containers.engine import connect
    from suite.containers.slurm_cluster import build_node_image

    built = build_node_image(connect(), lambda t: click.echo(t, nl=False), workload_image, force)
    how = "reused" if built.reused else f"built in {built.seconds:.0f} s"
    click.echo(f"{built.tags[0]} {built.image_id[:19]}: {how} ({built.size_bytes / 2**30:.2f} GiB)")


@slurm.command()
@click.option("--name", default=DEFAULT_CLUSTER, show_default=True)
def down(name: str) -> None:
    """Remove the cluster: containers, network, state and the host's munged."""
    from suite.slurm import cluster as demo

    demo.down(name, log=click.echo)


@slurm.command()
@click.option("--name", default=DEFAULT_CLUSTER, show_default=True)
def status(name: str) -> None:
    """Show the cluster's nodes and their states (exit 1 when it is not up)."""
    from suite.slurm import cluster as demo

    found = demo.load(name)
    if found is None:
        raise RunFailed(f"Slurm cluster {name} is not up (start it with `make slurm-up`)")
    states = found.client().node_states()
    click.echo(f"cluster {name}: SLURM_CONF={found.conf}; shared: {', '.join(found.shared)}")
    for node in found.nodes:
        click.echo(f"  {node} {found.addresses.get(node, '?')} {states.get(node, 'unknown')}")


COMMANDS = (slurm,)
"""This area's commands (registered by :mod:`suite.commands`)."""
