"""Datasets: ``trainbench data fetch`` and ``trainbench data-service dispatcher|worker``."""

from __future__ import annotations

from pathlib import Path

import click

from suite.console import console


@click.group()
def data() -> None:
    """Datasets: download and verify."""


@data.command()
@click.argument("dataset", type=click.Choice(["mnist"]))
@click.option(
    "--dest",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("data/mnist"),
    show_default=True,
    help="Directory to write the files into.",
)
@click.option("--mirror", "mirrors", multiple=True, metavar="URL", help="Base URL to download from (repeatable).")
@click.option(
    "--checksums",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A sha256sum-format file to verify against instead of the published checksums.",
)
@click.option("--timeout", type=click.FloatRange(min=0.1), default=60.0, show_default=True, help="Seconds per request.")
def fetch(dataset: str, dest: Path, mirrors: tuple[str, ...], checksums: Path | None, timeout: float) -> None:
    """Download DATASET and verify every file's checksum.

    Exit codes: 0 every file verified; 1 a download failed or a checksum did not match
    (the file is deleted); 2 bad input (e.g. a malformed --checksums file).
    """
    from suite.datasets.fetch import fetch as fetch_files

    def report(name: str, origin: str) -> None:
        console.print(f"verified {name} ({'already present' if origin == 'cached' else 'from ' + origin})")

    # FetchError: exit 1; ChecksumFileError (a bad --checksums file): exit 2
    paths = fetch_files(
        dataset, dest, mirrors=list(mirrors) or None, checksums=checksums, timeout_s=timeout, on_file=report
    )
    console.print(f"{dataset}: {len(paths)} files in {dest}; use --set data=idx --set data_dir={dest}")


@click.group("data-service")
def data_service() -> None:
    """The remote side of offloaded preprocessing (tf.data service): dispatcher and workers."""


@data_service.command()
@click.option("--port", type=click.IntRange(0, 65535), default=5050, show_default=True, help="0 = any free port.")
@click.option("--cpus", metavar="CPULIST", help="Pin the dispatcher to these CPUs, e.g. 0 or 2-3.")
def dispatcher(port: int, cpus: str | None) -> None:
    """Serve a tf.data service dispatcher until Ctrl-C or SIGTERM."""
    from suite.datasets.service import run_dispatcher

    run_dispatcher(port, cpus)  # DataServiceError: exit 2


@data_service.command()
@click.option("--dispatcher", "dispatcher_address", required=True, metavar="HOST:PORT", help="The dispatcher.")
@click.option("--port", type=click.IntRange(0, 65535), default=5051, show_default=True, help="0 = any free port.")
@click.option(
    "--advertise",
    metavar="HOST",
    help="Host name trainers use to reach this worker [default: this machine's host name].",
)
@click.option("--cpus", metavar="CPULIST", help="Pin the worker (and size its thread pool) to these CPUs.")
def worker(dispatcher_address: str, port: int, advertise: str | None, cpus: str | None) -> None:
    """Serve a tf.data service worker for DISPATCHER until Ctrl-C or SIGTERM."""
    import socket

    from suite.datasets.service import run_worker

    run_worker(dispatcher_address, port, advertise or socket.gethostname(), cpus)  # DataServiceError: exit 2


COMMANDS = (data, data_service)
"""This area's commands (registered by :mod:`suite.commands`)."""
