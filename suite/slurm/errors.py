"""Errors of the Slurm work; each carries the CLI exit status (2: bad input or host, 1: the job failed)."""

from __future__ import annotations

from suite.errors import BadInput


class SlurmError(BadInput):
    """A Slurm operation that cannot go ahead; the message says what to do.

    Attributes:
        exit_code: 2 for a problem with the input or the host (no Slurm client, no cluster,
            a refused option), 1 for a job that ran and failed.
    """

    exit_code = 2


class SlurmUnavailableError(SlurmError):
    """No Slurm client on PATH, or no controller answers with the configuration found."""


class ClusterError(SlurmError):
    """The demo cluster (``make slurm-up``) cannot be started, found or stopped."""


class QueueTimeoutError(SlurmError):
    """The job stayed pending longer than the queue timeout and was cancelled.

    Attributes:
        job_id: the cancelled job; reason: Slurm's pending reason (e.g. ``Resources``, ``JobHeldUser``).
    """

    exit_code = 1

    def __init__(self, message: str, job_id: str, reason: str) -> None:
        super().__init__(message, exit_code=1)
        self.job_id = job_id
        self.reason = reason
