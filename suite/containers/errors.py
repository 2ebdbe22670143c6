"""Errors of the container work (importable without the Docker SDK)."""

from __future__ import annotations

from suite.errors import TrainbenchError


class ContainerError(TrainbenchError, RuntimeError):
    """A container operation that cannot go ahead; the message says what to do.

    Attributes:
        exit_code: the CLI exit status: 2 for a problem with the input or the host
            (no engine, missing image, stale lock), 1 for a build or run that failed.
    """

    exit_code = 2


class EngineUnavailableError(ContainerError):
    """No Docker engine answers at the configured address."""


class BuildError(ContainerError):
    """``docker build`` (or debootstrap / ``docker import``) failed; the message carries the log's end."""

    exit_code = 1


class ImageMissingError(ContainerError):
    """The workload's image is not in the local engine."""
