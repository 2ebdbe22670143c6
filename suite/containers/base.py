"""An offline Debian base image: ``debootstrap`` from the host's Debian mirror, then ``docker import``.

For hosts that cannot reach a container registry (CI here, air-gapped sites): the
Dockerfiles take it as ``BASE_IMAGE`` instead of the public ``python:3.11-slim``.
Debian bookworm's ``python3`` is CPython 3.11, the version the lock files target.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import docker
from docker.errors import APIError, ContainerError, DockerException, ImageNotFound

from suite.containers.engine import BuildError
from suite.containers.engine import ContainerError as TrainbenchContainerError
from suite.containers.images import LOCAL_BASE_IMAGE, Log
from suite.containers.lock import LOCK_PYTHON

DEFAULT_SUITE = "bookworm"
PACKAGES = ("python3", "python3-venv", "python3-pip", "ca-certificates")
"""Installed into the base: Python 3.11 with venv and pip, and the system CA bundle."""
APT_SOURCES = (Path("/etc/apt/sources.list"), Path("/etc/apt/sources.list.d"))
"""Where the host's Debian mirrors are read from."""
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"


class BaseImageError(TrainbenchContainerError):
    """The base image cannot be built on this host (not root, no debootstrap, no mirror)."""


@dataclass(frozen=True)
class AptSource:
    """One ``deb`` entry of an APT configuration: a mirror URI and its suites."""

    uri: str
    suites: tuple[str, ...]


def read_apt_sources(paths: tuple[Path, ...] = APT_SOURCES) -> list[AptSource]:
    """The ``deb`` entries of one-line ``*.list`` files and deb822 ``*.sources`` files."""
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            files += sorted(f for f in p.iterdir() if f.suffix in (".list", ".sources"))
        elif p.is_file():
            files.append(p)
    out: list[AptSource] = []
    for f in files:
        try:
            text = f.read_text()
        except OSError:
            continue
        if f.suffix == ".sources":
            for stanza in re.split(r"\n\s*\n", text):
                fields: dict[str, str] = {}
                for line in stanza.splitlines():
                    if line.startswith("#") or ":" not in line:
                        continue
                    key, _, value = line.partition(":")
                    fields[key.strip().lower()] = value.strip()
                if "deb" in fields.get("types", "").split() and fields.get("enabled", "yes") != "no":
                    suites = tuple(fields.get("suites", "").split())
                    out += [AptSource(uri.rstrip("/"), suites) for uri in fields.get("uris", "").split()]
        else:
            for line in text.splitlines():
                parts = re.sub(r"\[[^\]]*\]", "", line.split("#", 1)[0]).split()
                if len(parts) >= 3 and parts[0] == "deb":
                    out.append(AptSource(parts[1].rstrip("/"), (parts[2],)))
    return out


def debian_mirrors(suite: str, sources: list[AptSource]) -> list[AptSource]:
    """The entries serving ``suite`` (and its ``-updates``/``-security`` companions), the main
    mirror (the one with ``suite`` itself) first.

    Raises:
        BaseImageError: no entry serves ``suite``; pass ``--mirror``.
    """
    related = [
        AptSource(s.uri, tuple(x for x in s.suites if x == suite or x.startswith(f"{suite}-")))
        for s in sources
        if any(x == suite or x.startswith(f"{suite}-") for x in s.suites)
    ]
    main = [s for s in related if suite in s.suites]
    if not main:
        raise BaseImageError(
            f"no Debian mirror for {suite} in {', '.join(map(str, APT_SOURCES))}; "
            "pass one with --mirror URL (e.g. http://deb.debian.org/debian)"
        )
    return main[:1] + [s for s in related if s is not main[0]]


def sources_file(mirrors: list[AptSource]) -> str:
    """A deb822 ``debian.sources`` for the base, from the host's entries."""
    stanzas = [
        f"Types: deb\nURIs: {m.uri}\nSuites: {' '.join(m.suites)}\nComponents: main\nSigned-By: {KEYRING}\n"
        for m in mirrors
    ]
    return "\n".join(stanzas)


@dataclass
class BaseImage:
    """The base image built (or found).

    Attributes:
        tag: its reference; image_id: ``sha256:...``; python: its ``python3 --version``;
        reused: True if it existed and nothing was built; seconds: wall time, s;
        size_bytes: the engine's size, bytes.
    """

    tag: str
    image_id: str
    python: str
    reused: bool
    seconds: float
    size_bytes: int


def _run_logged(cmd: list[str], log: Log) -> tuple[int, list[str]]:
    tail: list[str] = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            log(line)
            tail = [*tail, line.rstrip()][-30:]
    return proc.returncode, tail


def _python_version(client: docker.DockerClient, ref: str) -> str:
    try:
        out = client.containers.run(ref, ["python3", "--version"], remove=True, network_mode="none")
    except (ContainerError, APIError) as exc:
        raise BuildError(f"the base image {ref} cannot run python3: {exc}") from exc
    return bytes(out).decode().strip()


def build_base(
    client: docker.DockerClient,
    log: Log,
    tag: str = LOCAL_BASE_IMAGE,
    suite: str = DEFAULT_SUITE,
    mirror: str | None = None,
    force: bool = False,
) -> BaseImage:
    """Build the offline base: debootstrap ``suite`` (minbase + :data:`PACKAGES`), import it as ``tag``.

    Args:
        client: engine client.
        log: receives debootstrap's output and trainbench's notes.
        tag: image reference to create.
        suite: Debian suite (bookworm: CPython 3.11).
        mirror: Debian mirror URL; default: the host's APT configuration.
        force: rebuild even if ``tag`` exists.

    Raises:
        BaseImageError: not root, debootstrap missing, or no mirror known.
        BuildError: debootstrap or the import failed, or the image's Python is not 3.11.
    """
    start = time.perf_counter()
    if not force:
        try:
            found = client.images.get(tag)
            log(f"{tag} exists ({found.id}); --force rebuilds it\n")
            return BaseImage(
                tag,
                str(found.id),
                _python_version(client, tag),
                True,
                time.perf_counter() - start,
                int(found.attrs.get("Size", 0)),
            )
        except ImageNotFound:
            pass
    if os.geteuid() != 0:
        raise BaseImageError("debootstrap needs root: run `sudo make base-image`")
    debootstrap = shutil.which("debootstrap") or shutil.which("debootstrap", path="/usr/sbin:/sbin")
    if debootstrap is None:
        raise BaseImageError("debootstrap is not installed (Debian/Ubuntu: apt-get install debootstrap)")
    mirrors = [AptSource(mirror.rstrip("/"), (suite,))] if mirror else debian_mirrors(suite, read_apt_sources())
    with tempfile.TemporaryDirectory(prefix="trainbench-base-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        cmd = [debootstrap, "--variant=minbase", f"--include={','.join(PACKAGES)}", suite, str(rootfs), mirrors[0].uri]
        log(f"$ {' '.join(cmd)}\n")
        code, tail = _run_logged(cmd, log)
        if code != 0:
            raise BuildError(f"debootstrap failed with exit code {code}:\n" + "\n".join(tail))
        (rootfs / "etc/apt/sources.list").unlink(missing_ok=True)
        (rootfs / "etc/apt/sources.list.d/debian.sources").write_text(sources_file(mirrors))
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for f in (rootfs / junk).glob("*"):
                if f.is_file():
                    f.unlink()
        archive = Path(tmp) / "rootfs.tar"
        code, tail = _run_logged(
            ["tar", "--numeric-owner", "-C", str(rootfs), "--exclude=./dev/*", "-cf", str(archive), "."], log
        )
        if code != 0:
            raise BuildError("packing the root file system failed:\n" + "\n".join(tail))
        repository, _, version = tag.partition(":")
        changes = [
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "ENV LANG=C.UTF-8",
            'CMD ["python3"]',
            "LABEL org.opencontainers.image.title=trainbench-base",
            f'LABEL org.opencontainers.image.description="Debian {suite} minbase + {" ".join(PACKAGES)}"',
            f"LABEL org.trainbench.debian-suite={suite} org.trainbench.debian-mirror={mirrors[0].uri}",
        ]
        log(f"importing {archive.stat().st_size / 2**20:.0f} MiB as {tag}\n")
        try:
            client.api.import_image_from_file(
                str(archive), repository=repository, tag=version or "latest", changes=changes
            )
        except (APIError, DockerException) as exc:
            raise BuildError(f"docker import of the base image failed: {exc}") from exc
    image = client.images.get(tag)
    python = _python_version(client, tag)
    if not python.startswith(f"Python {LOCK_PYTHON}."):
        raise BuildError(f"{tag} has {python}; the images' lock files need CPython {LOCK_PYTHON} (Debian bookworm)")
    return BaseImage(tag, str(image.id), python, False, time.perf_counter() - start, int(image.attrs.get("Size", 0)))
