"""The ``trainbench`` command line: one click group, one module of commands per area (as asv's ``commands/``).

Each area module defines its click commands and lists them in ``COMMANDS``; :data:`AREAS`
registers them. Adding an area is one new module here and one line in :data:`AREAS` (a
module left out, or a name that is not a module, fails ``tests/suite/test_errors.py``
and the start of the command line, never silently).

Errors are mapped to exit statuses in one place, :meth:`TrainbenchGroup.invoke`: a
:class:`suite.errors.TrainbenchError` raised by any command prints ``error: <message>``
on stderr and exits with the error's ``exit_code`` (1 failed, 2 bad input, 3 tracking
failed, 130 interrupted). Commands raise; they never pick an exit status themselves. A
library of an optional part of the install that is missing (torch, MLflow, Docker, ...)
becomes :class:`suite.extras.MissingExtra` there too: exit 2 and the extra to install.

The area modules import their heavy dependencies (torch, MLflow, Docker, matplotlib)
inside the commands, so ``trainbench`` starts fast, and ``trainbench rank`` runs in an
image without MLflow or Docker (the TensorFlow image).
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from suite import __version__
from suite.console import error
from suite.errors import TrainbenchError
from suite.extras import missing_extra

AREAS = (
    "run",  # run, rank (hidden), sync
    "inspect",  # list, show, prices, schema
    "bench",  # bench, bench-pipelines, bench-mnist, bench-validate
    "gpu",  # gpu-check
    "data",  # data fetch, make-imagenet-like, manifest, verify; data-service
    "validate",  # validate, report, submission-schema
    "submit",  # submit
    "bands",  # bands list, bands derive
    "images",  # images build, base, lock, prune, list
    "compare",  # compare A B
    "export",  # export mlperf
    "slurm",  # slurm up, down, status, image (the demo cluster)
    "ladder",  # ladder (the CPU optimization ladder)
    "reproduce",  # reproduce RESULT (re-measure a claim)
)
"""The command modules of ``suite.commands``, each with its ``COMMANDS``; one line per area."""


class TrainbenchGroup(click.Group):
    """The top-level group: maps a :class:`TrainbenchError` to its message and exit status."""

    def invoke(self, ctx: click.Context) -> Any:
        """Run the chosen command; a :class:`TrainbenchError` becomes ``error: ...`` and its exit code,
        and so does a missing optional library (:func:`suite.extras.missing_extra`, exit 2)."""
        try:
            return super().invoke(ctx)
        except TrainbenchError as exc:
            error(str(exc))
            ctx.exit(exc.exit_code)
        except ModuleNotFoundError as exc:
            missing = missing_extra(exc, f"trainbench {ctx.invoked_subcommand or ''}".strip())
            if missing is None:
                raise
            error(str(missing))
            ctx.exit(missing.exit_code)


@click.group(cls=TrainbenchGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="trainbench")
def main() -> None:
    """trainbench: reproducible training-throughput benchmarks (samples/s and samples per dollar)."""


for _area in AREAS:
    for _command in importlib.import_module(f"{__name__}.{_area}").COMMANDS:
        main.add_command(_command)
