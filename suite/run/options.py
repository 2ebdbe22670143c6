"""What a run is asked for (:class:`RunOptions`), what it produced (:class:`RunOutcome`), and its errors."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from suite.errors import TrainbenchError
from suite.runtimes.base import ProgressCallback, Runtime
from suite.runtimes.local import LocalRuntime

if TYPE_CHECKING:
    from suite.results import Result

__all__ = ["ProgressCallback", "ResultElsewhere", "RunError", "RunOptions", "RunOutcome", "new_stamped_dir"]


def new_stamped_dir(parent: Path, prefix: str = "", token: str | None = None) -> Path:
    """Create and return ``parent/<prefix><UTC time>-<token>``, e.g. ``20261126T185445Z-e91573e6``: the
    one naming of a run's, ladder's, sweep's or benchmark's directory in an output tree, so that
    they sort by time and two made in the same second do not collide.

    Args:
        parent: the folder to create it in (created too when missing).
        prefix: put before the time, e.g. ``"ladder-"``.
        token: 8 characters that tell it apart (a run's id); default: 8 random hex digits.

    Raises:
        FileExistsError: the directory exists already (never with the random token, in practice).
        OSError: ``parent`` cannot be created or written.
    """
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    path = parent / f"{prefix}{stamp}-{token or uuid.uuid4().hex[:8]}"
    path.mkdir(parents=True)
    return path


class RunError(TrainbenchError, RuntimeError):
    """The run could not produce a complete result. ``result_path`` points at what was kept.

    ``exit_code`` is 130 for an interrupted run, else the rank's own exit status when it
    gave one (> 0), else 1.
    """

    exit_code = 1

    def __init__(self, message: str, result_path: Path | None = None, exit_code: int = 1) -> None:
        super().__init__(message, exit_code=exit_code)
        self.result_path = result_path


class ResultElsewhere(Exception):
    """A multi-host run finished here, but global rank 0, which writes the result, ran on another host."""


@dataclass
class RunOptions:
    """Where results go and how cost is computed.

    Attributes:
        output_dir: root of the result tree; a run writes ``<output_dir>/<workload>/<stamp>-<id>/``.
        tracking_uri: MLflow tracking URI, or None to skip MLflow.
        system: system name recorded in the result (default: the host name).
        price_per_hour: USD/hour of the machine, or None.
        instance_type: instance type to look up in the price table, or None.
        pricing: ``on-demand`` or ``spot`` (price-table lookups only).
        region: region for price-table lookups, or None.
        runtime: where the ranks run (:mod:`suite.runtimes`): this host (the default), the
            workload's image, or a Slurm job.
        parent_run_id: MLflow run to log this run under (a sweep's parent).
        started_unix_s: when the command started (seconds since the epoch), from which a
            profile's ``budget_s`` counts; None: when :func:`suite.run.execute.execute` is called.
        notify: receives lines about the run worth showing while it runs (a Slurm job's
            state changes), or None.
    """

    output_dir: Path
    tracking_uri: str | None
    system: str | None = None
    price_per_hour: float | None = None
    instance_type: str | None = None
    pricing: str = "on-demand"
    region: str | None = None
    runtime: Runtime = field(default_factory=LocalRuntime)
    parent_run_id: str | None = None
    started_unix_s: float | None = None
    notify: Callable[[str], None] | None = None


@dataclass
class RunOutcome:
    """What a finished run produced."""

    result: Result
    result_path: Path
    timeline_path: Path
    mlflow_run_id: str | None = None
    tracking_error: str | None = None
    artifacts: list[Path] = field(default_factory=list)
