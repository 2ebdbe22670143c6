"""Container images: ``trainbench images build|base|lock|prune|list``.

Docker is imported only when a command needs it, so ``trainbench`` starts as fast
without Docker.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click
from rich.table import Table

from suite.console import console
from suite.errors import BadInput

CA_MARKER = b"-----BEGIN CERTIFICATE-----"


def _echo_raw(text: str) -> None:
    """Stream build output as it comes (no markup, no wrapping)."""
    sys.stdout.write(text)
    sys.stdout.flush()


def _size(n: int) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def resolve_ca_bundle(option: Path | None, disabled: bool, environ: dict[str, str]) -> tuple[Path | None, str]:
    """The extra CA bundle for builds and where it came from.

    Order: ``--ca-bundle`` / ``TRAINBENCH_CA_BUNDLE``, then ``PIP_CERT`` (the CAs the
    host's pip trusts), then ``containers/ca/extra-ca.pem`` in the checkout.

    Raises:
        click.BadParameter: the file is missing or holds no PEM certificate.
    """
    from suite.provenance import PROJECT_ROOT

    if disabled:
        return None, "none (--no-ca-bundle)"
    candidates: list[tuple[Path, str]] = []
    if option is not None:
        candidates.append((option, "--ca-bundle / TRAINBENCH_CA_BUNDLE"))
    elif environ.get("PIP_CERT"):
        candidates.append((Path(environ["PIP_CERT"]), "PIP_CERT"))
    else:
        local = PROJECT_ROOT / "containers" / "ca" / "extra-ca.pem"
        if local.exists():
            candidates.append((local, "containers/ca/extra-ca.pem"))
    for path, origin in candidates:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise click.BadParameter(f"{path} (from {origin}): {exc}", param_hint="--ca-bundle") from exc
        if CA_MARKER not in data:
            raise click.BadParameter(f"{path} (from {origin}) holds no PEM certificate", param_hint="--ca-bundle")
        return path, origin
    return None, "none"


@click.group("images")
def images() -> None:
    """Build and inspect the workloads' container images (Docker)."""


@images.command("build")
@click.argument("names", nargs=-1)
@click.option(
    "--base-image",
    envvar="TRAINBENCH_BASE_IMAGE",
    help="BASE_IMAGE of the Dockerfiles [default: trainbench-base:bookworm if `make base-image` built it, "
    "else python:3.11-slim].",
)
@click.option(
    "--ca-bundle",
    type=click.Path(path_type=Path, dir_okay=False),
    envvar="TRAINBENCH_CA_BUNDLE",
    help="Extra CA bundle (PEM) for a TLS-intercepting proxy, used only while downloading packages "
    "[default: PIP_CERT when set].",
)
@click.option("--no-ca-bundle", is_flag=True, help="Use no extra CA bundle, even if PIP_CERT is set.")
@click.option(
    "--network", default="host", show_default=True, help="Network of the build's RUN steps (host: the host's network)."
)
@click.option("--build-arg", "build_args", multiple=True, metavar="KEY=VALUE", help="Extra build argument (repeatable)")
@click.option("--force", is_flag=True, help="Build even if an image with the same inputs exists.")
@click.option("--no-cache", is_flag=True, help="Do not use the engine's layer cache (implies --force).")
def build_cmd(
    names: tuple[str, ...],
    base_image: str | None,
    ca_bundle: Path | None,
    no_ca_bundle: bool,
    network: str,
    build_args: tuple[str, ...],
    force: bool,
    no_cache: bool,
) -> None:
    """Build the images NAMES (default: all), each after the image it builds on.

    An image whose inputs (Dockerfile, lock files, sources, base image) are unchanged
    is reused without building. Exit status: 0 built or reused, 1 a build failed,
    2 bad input or no engine.
    """
    from suite.containers.build import BuiltImage, build_image
    from suite.containers.engine import connect
    from suite.containers.images import resolve_base, with_parents

    args: dict[str, str] = {}
    for item in build_args:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise BadInput(f"--build-arg {item!r}: expected KEY=VALUE")
        args[key] = value
    try:
        ca, origin = resolve_ca_bundle(ca_bundle, no_ca_bundle, dict(os.environ))
        order = with_parents(list(names))
        client = connect()
        base_ref, base_id, why = resolve_base(client, base_image)
        console.print(
            f"base image: {base_ref} ({why}{'' if base_id else ', not present locally: the engine will pull it'})\n"
            f"extra CA bundle: {ca or 'none'} ({origin})",
            highlight=False,
        )
        built: dict[str, BuiltImage] = {}
        for image in order:
            built[image.name] = build_image(
                client,
                image,
                _echo_raw,
                base=(base_ref, base_id),
                parent_id=built[image.parent].image_id if image.parent else None,
                ca_bundle=ca,
                network=network,
                build_args=args,
                no_cache=no_cache,
                force=force,
            )
    except click.BadParameter as exc:
        raise BadInput(exc.format_message()) from exc
    for b in built.values():
        how = "reused" if b.reused else f"built in {b.seconds:.0f} s"
        console.print(
            f"{b.name}: {b.image_id} ({_size(b.size_bytes)}, {how}; lock-sha256 {b.lock_digest[:12]}; "
            f"tags {', '.join(b.tags)})",
            highlight=False,
            soft_wrap=True,
        )


@images.command("base")
@click.option("--tag", default="trainbench-base:bookworm", show_default=True, help="Reference of the image to create.")
@click.option("--suite", "suite_name", default="bookworm", show_default=True, help="Debian suite (bookworm: 3.11).")
@click.option("--mirror", help="Debian mirror URL [default: the host's APT sources].")
@click.option("--force", is_flag=True, help="Rebuild even if the image exists.")
def base_cmd(tag: str, suite_name: str, mirror: str | None, force: bool) -> None:
    """Build an offline Debian base image with debootstrap (for hosts without registry access).

    Needs root and debootstrap. The images use it as BASE_IMAGE by default once it exists.
    """
    from suite.containers.base import build_base
    from suite.containers.engine import connect

    image = build_base(connect(), _echo_raw, tag=tag, suite=suite_name, mirror=mirror, force=force)
    how = "exists" if image.reused else f"built in {image.seconds:.0f} s"
    console.print(
        f"{image.tag}: {image.image_id} ({image.python}, {_size(image.size_bytes)}, {how})",
        highlight=False,
        soft_wrap=True,
    )


@images.command("lock")
@click.option("--index-url", default="https://pypi.org/simple", show_default=True, help="Index to resolve against.")
@click.option("--check", is_flag=True, help="Only check that every lock matches its inputs (exit 2 if stale).")
def lock_cmd(index_url: str, check: bool) -> None:
    """Regenerate the images' hash-pinned lock files (uv pip compile --generate-hashes, Linux x86_64, Python 3.11)."""
    from suite.containers.lock import LOCKS, check_lock, compile_lock, locked_packages
    from suite.provenance import PROJECT_ROOT

    for lock in LOCKS.values():  # the CPU lock first: the GPU lock is resolved against it
        if check:
            check_lock(lock, PROJECT_ROOT)  # LockError: exit 2 when stale
            console.print(f"{lock.path}: up to date")
        else:
            path = compile_lock(lock, PROJECT_ROOT, index_url)
            console.print(f"{lock.path}: {len(locked_packages(path))} packages pinned with hashes")


@images.command("prune")
def prune_cmd() -> None:
    """Untag images of superseded inputs (every NAME:<digest> not on NAME:latest).

    Run it when no build is running; then `docker image prune` frees their layers.
    """
    from suite.containers.build import prune_superseded
    from suite.containers.engine import connect
    from suite.containers.images import IMAGES

    client = connect()
    removed = [tag for image in IMAGES.values() for tag in prune_superseded(client, image, _echo_raw)]
    console.print(f"{len(removed)} superseded tags removed; `docker image prune` frees their layers", highlight=False)


@images.command("list")
def list_cmd() -> None:
    """Show the registered images and what the engine holds of them."""
    from suite.containers.engine import connect
    from suite.containers.images import IMAGES, LABEL_INPUTS, LABEL_LOCK, find_image

    client = connect()
    t = Table("image", "id", "size", "created", "inputs sha256", "lock sha256", "description")
    for image in IMAGES.values():
        found = find_image(client, f"{image.name}:latest")
        if found is None:
            t.add_row(image.name, "not built (make images)", "", "", "", "", image.description)
            continue
        labels = found.labels or {}
        t.add_row(
            image.name,
            found.id[:19],
            _size(int(found.attrs.get("Size", 0))),
            str(found.attrs.get("Created", ""))[:19],
            labels.get(LABEL_INPUTS, "")[:12],
            labels.get(LABEL_LOCK, "")[:12],
            image.description,
        )
    console.print(t)


COMMANDS = (images,)
"""This area's commands (registered by :mod:`suite.commands`)."""
