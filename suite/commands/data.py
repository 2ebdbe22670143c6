"""Datasets: ``trainbench data fetch|make-imagenet-like|manifest|verify`` and ``data-service dispatcher|worker``."""

from __future__ import annotations

from pathlib import Path

import click

from suite.console import console


@click.group()
def data() -> None:
    """Datasets: download, generate (an ImageNet-like JPEG set), seal with SHA-256s, and verify."""


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


@data.command("make-imagenet-like")
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False))
@click.option("--classes", type=click.IntRange(1, 100_000), default=10, show_default=True, help="Class folders.")
@click.option("--images-per-class", type=click.IntRange(1, 1_000_000), default=100, show_default=True)
@click.option("--seed", type=click.IntRange(0, 2**63 - 1), default=0, show_default=True,
              help="Fixes every pixel and byte: the same seed writes the same files.")  # fmt: skip
@click.option("--long-side", type=click.IntRange(8, 4096), default=500, show_default=True,
              help="Long side of full-size images, px (ImageNet: mostly 500, e.g. 500x375).")  # fmt: skip
@click.option("--quality", type=click.IntRange(1, 100), default=90, show_default=True, help="JPEG quality.")
@click.option("--texture", type=click.FloatRange(0, 2), default=None,
              help="Texture amplitude, which sets the file size [default: tuned for ~110 KB at 500 px].")  # fmt: skip
@click.option("--jobs", type=click.IntRange(1, 1024), default=1, show_default=True, help="Processes writing.")
def make_imagenet_like(
    directory: Path,
    classes: int,
    images_per_class: int,
    seed: int,
    long_side: int,
    quality: int,
    texture: float | None,
    jobs: int,
) -> None:
    """Write an ImageNet-like JPEG set into DIRECTORY (new or empty): class folders of photo-like
    JPEGs around ImageNet's sizes (500x375, about 110 KB at quality 90), SHA256SUMS and manifest.json.

    It stands for ImageNet's decoding and cropping cost, not for its content: see the README.
    Exit codes: 0 written; 2 bad input (DIRECTORY not empty, a setting out of range).
    """
    from suite.datasets.image_sets import MakeSettings
    from suite.datasets.image_sets import make_imagenet_like as make
    from suite.datasets.photos import DEFAULT_TEXTURE

    settings = MakeSettings(
        classes, images_per_class, seed, long_side, quality, DEFAULT_TEXTURE if texture is None else texture
    )
    with console.status("writing") as status:
        s = make(directory, settings, jobs, on_class=lambda n: status.update(f"{n}/{classes} classes written"))
    console.print(
        f"{s.images} images in {s.classes} classes in {directory}: mean {s.mean_bytes / 1e3:.1f} KB, "
        f"{s.mean_width:.0f}x{s.mean_height:.0f} px, {s.total_bytes / 1e6:.1f} MB in all; "
        f"use --set input_pipeline=dataloader --set data_dir={directory}"
    )


@data.command()
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False, exists=True))
def manifest(directory: Path) -> None:
    """Seal a class-folder tree you bring (e.g. ImageNet's train/): write its SHA256SUMS and manifest.json,
    so `trainbench data verify` can tell later whether a run read the same files.

    Exit codes: 0 written; 2 not a tree of class folders of images.
    """
    from suite.datasets.image_sets import write_manifest

    s = write_manifest(directory)
    console.print(f"{s.images} images in {s.classes} classes, {s.total_bytes / 1e9:.2f} GB: sealed {directory}")


@data.command()
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False, exists=True))
def verify(directory: Path) -> None:
    """Check every image of the set in DIRECTORY against its SHA256SUMS and manifest.json.

    Exit codes: 0 every image matches; 1 images are missing, changed or unlisted; 2 no or a bad manifest.
    """
    from suite.datasets.set_verify import VerifyFailed, verify

    with console.status("verifying") as status:
        report = verify(directory, on_progress=lambda n: status.update(f"{n} images checked"))
    if not report.ok:
        parts = [
            f"{len(v)} {k} (first: {v[0]})"
            for k, v in (("missing", report.missing), ("changed", report.changed), ("unlisted", report.unlisted))
            if v
        ]
        raise VerifyFailed(f"{directory}: {'; '.join(parts)}; {report.checked} images match")
    console.print(f"{directory}: all {report.checked} images match their SHA-256")


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
