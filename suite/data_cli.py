"""``trainbench data fetch`` and ``trainbench data-service dispatcher|worker`` (click)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from suite.console import console, fail, stop_on_sigterm


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
    from suite.datasets import ChecksumFileError, FetchError
    from suite.datasets import fetch as fetch_files

    def report(name: str, origin: str) -> None:
        console.print(f"verified {name} ({'already present' if origin == 'cached' else 'from ' + origin})")

    try:
        paths = fetch_files(
            dataset, dest, mirrors=list(mirrors) or None, checksums=checksums, timeout_s=timeout, on_file=report
        )
    except ChecksumFileError as exc:
        fail(str(exc), 2)
    except FetchError as exc:
        fail(str(exc), 1)
    console.print(f"{dataset}: {len(paths)} files in {dest}; use --set data=idx --set data_dir={dest}")


@click.group("data-service")
def data_service() -> None:
    """The remote side of offloaded preprocessing (tf.data service): dispatcher and workers."""


@data_service.command()
@click.option("--port", type=click.IntRange(0, 65535), default=5050, show_default=True, help="0 = any free port.")
@click.option("--cpus", metavar="CPULIST", help="Pin the dispatcher to these CPUs, e.g. 0 or 2-3.")
def dispatcher(port: int, cpus: str | None) -> None:
    """Serve a tf.data service dispatcher until Ctrl-C or SIGTERM."""
    from suite.data_service import DataServiceError, run_dispatcher

    try:
        run_dispatcher(port, cpus)
    except DataServiceError as exc:
        fail(str(exc))


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

    from suite.data_service import DataServiceError, run_worker

    try:
        run_worker(dispatcher_address, port, advertise or socket.gethostname(), cpus)
    except DataServiceError as exc:
        fail(str(exc))


@click.command("bench-mnist")
@click.option("--repeats", "chain_repeats", type=click.IntRange(0, 64), default=4, show_default=True,
              help="preprocess_repeats of the heavy chain.")  # fmt: skip
@click.option("--batch-size", type=click.IntRange(1, 4096), default=64, show_default=True)
@click.option("--steps", type=click.IntRange(2, 100_000), default=20, show_default=True, help="Minimum measured steps.")
@click.option("--seconds", type=click.FloatRange(0, 3600), default=10.0, show_default=True, help="Minimum measured s.")
@click.option("--runs", type=click.IntRange(1, 100), default=2, show_default=True, help="Repeats per point.")
@click.option("--output-dir", type=click.Path(path_type=Path), default=Path("results/bench-mnist"), show_default=True)
@click.option("--service-image", metavar="IMAGE",
              help="Also run the tf.data service in CPU-pinned containers of IMAGE (e.g. trainbench-cpu).")  # fmt: skip
def bench_mnist(
    chain_repeats: int,
    batch_size: int,
    steps: int,
    seconds: float,
    runs: int,
    output_dir: Path,
    service_image: str | None,
) -> None:
    """Input-bound training and offloaded preprocessing on this machine, in printed figures (issue 5).

    Part 1: 0, 1, 2 DataLoader workers. Part 2: the trainer pinned to one CPU,
    preprocessing on that CPU vs on a tf.data service worker pinned to another
    (a process, and with --service-image also a container).
    """
    from suite.bench_mnist import BenchSettings, main
    from suite.containers.runtime import image_reference
    from suite.data_service import DataServiceError

    image = image_reference(service_image) if service_image else None
    if image:  # before part 1's minutes of measurement, not after them
        from suite.containers.errors import ContainerError
        from suite.containers.service import check_service_image

        try:
            check_service_image(image)
        except ContainerError as exc:
            fail(f"--service-image: {exc}")
    settings = BenchSettings(chain_repeats, batch_size, steps, seconds, runs, image)
    stop_on_sigterm()  # points/steps measured are kept, services removed
    try:
        code = main(settings, output_dir.resolve(), console)
    except DataServiceError as exc:
        fail(str(exc), 1)
    except KeyboardInterrupt:
        fail("bench-mnist interrupted between points; the points measured are in --output-dir", 130)
    sys.exit(code)
