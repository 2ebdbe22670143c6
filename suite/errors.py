"""trainbench's errors: one base whose subclasses carry the CLI exit status.

The command line maps a :class:`TrainbenchError` to ``error: <message>`` on stderr and
its ``exit_code`` in one place (``suite.commands``), as ReFrame's exception hierarchy
does; no call site picks an exit status. The four families and their status:

==========================  ====  ============================================================
class                       exit  meaning
==========================  ====  ============================================================
:class:`RunFailed`          1     the run (or a build, a download) failed; what was measured
                                  is kept
:class:`BadInput`           2     bad input: a spec, override, option or file the command
                                  cannot use; nothing ran
:class:`TrackingFailed`     3     the result is saved, but MLflow could not record it
:class:`Interrupted`        130   stopped by Ctrl-C or SIGTERM; what was measured is kept
==========================  ====  ============================================================

Modules derive their own errors from these (``ConfigError(BadInput)``, ...). An error
may carry another status for one instance (``RunError`` passes a rank's own exit
status on), through the ``exit_code`` argument.

This module imports nothing else of trainbench, so every layer of ``suite`` may use it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


class TrainbenchError(Exception):
    """Base of every error the CLI reports as ``error: <message>`` with :attr:`exit_code`.

    Args:
        message: what is wrong and how to fix it (shown to the user as is, escaped).
        exit_code: the exit status for this instance; default: the class's.

    Attributes:
        exit_code: the CLI exit status (a class default, overridable per instance).
    """

    exit_code: int = 1

    def __init__(self, message: str = "", *, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class RunFailed(TrainbenchError):
    """The work the command was asked to do failed (exit 1)."""

    exit_code = 1


class BadInput(TrainbenchError):
    """Input the command cannot use; nothing was started (exit 2)."""

    exit_code = 2


class TrackingFailed(TrainbenchError):
    """The result is on disk, but the tracking server could not record it (exit 3)."""

    exit_code = 3


class Interrupted(TrainbenchError):
    """Stopped by Ctrl-C or SIGTERM (exit 130, the shell's 128 + SIGINT)."""

    exit_code = 130


class PreflightError(BadInput, ValueError):
    """The environment cannot host the run (checked before it starts): no GPU, no output space, no sbatch, ..."""


class TrackingError(TrackingFailed, RuntimeError):
    """MLflow could not record the run (the result file is kept regardless).

    Defined here rather than in :mod:`suite.tracking`, so that catching it does not
    import MLflow.
    """


def validation_problems(exc: ValidationError) -> str:
    """A pydantic ``ValidationError`` as one line: ``dotted.key: message; ...`` (``(top)`` for the root),
    for the errors that tell a user which key of a file is wrong."""
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}" for e in exc.errors())
