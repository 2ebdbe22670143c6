"""What one rank hands to the runner: its raw records, its environment, and how it ended.

``workloads.rank`` writes a :class:`RankMeasurement` to the measurement file
(``measurement.json``; rank r > 0 of a host: ``measurement-rank<r>.json``), and the
runner (``suite.run``) reads it back with :meth:`RankMeasurement.read`. The JSON is the
one the rank always wrote: the same keys, step and window records in
:meth:`harness.records.StepRecord.to_dict` form, ``ranks`` only when the ranks' records
were gathered. The progress log beside it holds one step record per line.

The states of a measurement file:

- ``complete`` false, no ``error``: the rank is still running (written once its
  environment is captured, so a rank that dies keeps it);
- ``complete`` true: every window finished;
- ``complete`` false with ``error``: it failed or was interrupted, and says why.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.records import StepRecord, WindowRecord
from harness.sampler import UtilizationSample


class RankMeasurement(BaseModel):
    """One rank's measurement (rank 0's carries every rank's under ``ranks`` once gathered).

    Attributes:
        rank: the global rank.
        world_size: ranks in the job.
        complete: every window finished.
        error: why the rank failed or stopped, or None.
        workload_info: what the workload says about itself (``Workload.describe``).
        system: the environment the rank read back (``harness.system.capture_system``).
        steps: raw step records.
        windows: raw window records.
        utilization: the sampler's readings.
        run_uid: the run's identity, as the harness holds it (the supervisor passes one to every rank).
        origin_unix_s: wall-clock seconds since the epoch at this rank's run origin, the instant its
            records' ``start_s`` are relative to (None before the loop starts).
        plan: the plan the harness actually applied (``harness.loop.Measurement.plan``).
        ranks: every rank's measurement, gathered on global rank 0 of a distributed job.
    """

    model_config = ConfigDict(extra="ignore")

    rank: int = 0
    world_size: int = Field(1, ge=1)
    complete: bool = False
    error: str | None = None
    workload_info: dict[str, Any] = Field(default_factory=dict)
    system: dict[str, Any] = Field(default_factory=dict)
    steps: list[StepRecord] = Field(default_factory=list)
    windows: list[WindowRecord] = Field(default_factory=list)
    utilization: list[UtilizationSample] = Field(default_factory=list)
    run_uid: str | None = None
    origin_unix_s: float | None = None
    plan: dict[str, Any] | None = None
    ranks: list[RankMeasurement] | None = None

    @property
    def finished(self) -> bool:
        """The rank wrote its final measurement: complete, or ended with an error."""
        return self.complete or self.error is not None

    def to_json(self) -> dict[str, Any]:
        """The JSON-ready form written to the measurement file (no ``ranks`` key until gathered)."""
        return self.model_dump(mode="json", exclude={"ranks"} if self.ranks is None else set())

    def write(self, path: Path) -> None:
        """Write atomically (temp file + rename), so a reader never sees half a file.

        Raises:
            ValueError: a non-finite number in the records (JSON has none).
        """
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(self.to_json(), allow_nan=False))
        os.replace(tmp, path)

    @classmethod
    def read(cls, path: Path) -> RankMeasurement | None:
        """The measurement in ``path``; None when the file is missing or not a measurement.

        A rank writes its file atomically, so a file that does not parse was not written
        by a rank: it is treated like a missing one (the runner then rebuilds the steps
        from the progress log).
        """
        try:
            return cls.model_validate_json(path.read_bytes())
        except (OSError, ValidationError, ValueError):
            return None
