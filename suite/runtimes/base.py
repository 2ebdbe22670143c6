"""The one contract of every runtime (WHERE the ranks run: this host, a container, a Slurm job).

``suite.run.execute`` drives every runtime the same way:

1. :meth:`Runtime.job_config`: the run's config as this runtime runs it (a Slurm job's launch
   settings take the job's layout);
2. :meth:`Runtime.preflight`: what can be checked before anything starts;
3. :meth:`Runtime.run`: the ranks run in a run directory, with progress callbacks, and their
   measurements come back (:class:`Ran`);
4. :meth:`Runtime.annotate`: what the runtime adds to the result (a Slurm job and its nodes);
5. :meth:`Runtime.comparison`: the scaling comparison a complete run is followed by, if any
   (the same global batch in one process, or the same job on one node).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from suite.config import RunConfig
from suite.launchers import LaunchPlan
from workloads.measurement import RankMeasurement

if TYPE_CHECKING:
    from suite.results import Result

ProgressCallback = Callable[[dict[str, Any]], None]
"""Receives each progress event: a step record as :meth:`harness.records.StepRecord.to_dict`, or an
event with an ``event`` key (the run header, the rank's precision decision, environment and time
projection)."""


@dataclass
class RunContext:
    """What a runtime is handed besides the config and the run directory.

    Attributes:
        run_uid: the run's identity, handed to every rank's harness (its ``Measurement.run_uid``).
        on_progress: receives each progress event (see :data:`ProgressCallback`), or None.
        on_plan: receives the plan that runs, just before the ranks start (the run's claim records it).
        announce: receives the local plan before it is started on this host (the run header is made
            from it); a Slurm job's ranks run elsewhere, so its runtime does not call it.
        on_submit: receives a Slurm job's id once it is submitted.
        notify: receives lines about the run worth showing while it runs (a job's state changes).
        deadline_unix_s: with a ``budget_s`` in the windows, the instant the budget ends (the command's
            start + ``budget_s``), handed to the ranks, whose harness fits the run into what is left.
    """

    run_uid: str
    on_progress: ProgressCallback | None = None
    on_plan: Callable[[LaunchPlan], None] | None = None
    announce: Callable[[LaunchPlan], None] | None = None
    on_submit: Callable[[str], None] | None = None
    notify: Callable[[str], None] | None = None
    deadline_unix_s: float | None = None

    def say(self, line: str) -> None:
        """Pass ``line`` to :attr:`notify` (when there is one)."""
        if self.notify is not None:
            self.notify(line)


@dataclass
class Ran:
    """What the ranks left: their measurement, the plan that ran, the exit status, and the runtime's own record.

    Attributes:
        measurement: rank 0's measurement, with every rank's under ``ranks`` for a distributed run;
            None when this host's ranks of a multi-host run finished and global rank 0, which writes
            the result, ran on another host.
        plan: the plan that ran (recorded in the result's ``runtime``).
        code: the exit status (the rank's, the launcher's, ``docker run``'s; 0, 1 or 130 for a job).
        record: what the runtime itself keeps for :meth:`Runtime.annotate` (a Slurm job's state), or None.
    """

    measurement: RankMeasurement | None
    plan: LaunchPlan
    code: int
    record: Any = None


@dataclass(frozen=True)
class Comparison:
    """The run a complete run is compared against, for its scaling efficiency.

    Attributes:
        config: the comparison's config.
        runtime: where it runs.
        folder: its folder inside the run directory (``single-process``, ``one-node``).
        what: how its failure is named in the run's error (``the single-process comparison``).
        nodes: the nodes the run spans (> 1: the scaling is over nodes, recorded in ``scaling.nodes``).
        announce: a line to show before it starts, or None.
    """

    config: RunConfig
    runtime: Runtime
    folder: str
    what: str
    nodes: int = 1
    announce: str | None = None


class Runtime(Protocol):
    """Where the ranks run; see the module docstring for how ``execute`` drives it."""

    @property
    def name(self) -> str:
        """``local``, ``docker`` or ``slurm``."""
        ...

    def job_config(self, config: RunConfig) -> RunConfig:
        """``config`` as this runtime runs it.

        Raises:
            suite.launchers.LaunchError: a launch setting does not fit this runtime.
        """
        ...

    def preflight(self, config: RunConfig, output_dir: Path) -> None:
        """Check what can be checked before anything starts (tools, GPUs, images, a shared directory).

        Raises:
            suite.errors.BadInput: the run cannot start here; the message says what to change.
        """
        ...

    def run(self, config: RunConfig, run_dir: Path, ctx: RunContext) -> Ran:
        """Run the ranks of ``config`` in ``run_dir`` to their end and return what they measured.

        A run that fails or is interrupted still returns what its ranks measured, marked incomplete.
        """
        ...

    def annotate(self, result: Result, ran: Ran, run_dir: Path, system: str | None) -> Result:
        """``result`` with what this runtime records beside the ranks' measurement (resealed), or unchanged."""
        ...

    def comparison(self, config: RunConfig, ran: Ran) -> Comparison | str | None:
        """The comparison a complete run of ``config`` is followed by, a note why there is none, or None."""
        ...
