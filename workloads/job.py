"""The job file: what the supervisor hands a rank (``python -m workloads.rank --job job.json``).

The outbound leg of the supervisor-rank boundary, typed as the return leg is
(:class:`workloads.measurement.RankMeasurement`): the supervisor (``suite.runtimes``) builds a
:class:`RankJob` and writes it; the rank and the bench worker read it back with
:meth:`RankJob.read`, which refuses a malformed file with what is wrong. Nothing crosses the
process boundary as a string-key dict, except ``params``, which the workload's own params model
validates on the rank (each workload has its own).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from harness.windows import RunPlan, plan_from_mapping
from workloads.lifeline import GRACE_S, TIMEOUT_S

MAX_JOB_BYTES = 4 * 2**20
"""A job file larger than this is not one the supervisor wrote (it is a few KiB)."""


class WindowsConfig(BaseModel):
    """Warm-up and measurement windows (each ends when BOTH minimums are met), and the sampler's period."""

    model_config = ConfigDict(extra="forbid")

    warmup_steps: int = Field(ge=1, description="minimum warm-up steps")
    warmup_seconds: float = Field(ge=0, allow_inf_nan=False, description="minimum warm-up seconds")
    measure_steps: int = Field(ge=1, description="minimum measured steps")
    measure_seconds: float = Field(ge=0, allow_inf_nan=False, description="minimum measured seconds")
    repeats: int = Field(1, ge=1, le=1000, description="warm-up + measurement pairs")
    sampler_interval_s: float = Field(0.5, gt=0, le=60, allow_inf_nan=False, description="utilization sampling period")
    budget_s: float | None = Field(
        None,
        gt=0,
        allow_inf_nan=False,
        description="time budget in seconds from the command's start to the end of the measurement: the harness "
        "measures the step time in the first warm-up steps and lowers the step counts to fit (harness.budget); "
        "unset: the windows run as given",
    )
    budget_floor_steps: int = Field(
        10, ge=4, le=100_000, description="measured steps, over all repeats, that the budget may not cut below"
    )

    def plan(self) -> RunPlan:
        """The harness's :class:`harness.windows.RunPlan` of these windows.

        Raises:
            harness.windows.WindowError: the windows cannot give a valid measurement.
        """
        return plan_from_mapping(self.model_dump(exclude={"sampler_interval_s"}))


def _seconds(value: Any, name: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"lifeline.{name} must be a number of seconds, got {value!r}")
    if not low <= value <= high:
        raise ValueError(f"lifeline.{name}={value} is outside [{low}, {high}] seconds")
    return float(value)


class LifelineEntry(BaseModel):
    """Where a rank finds its supervisor's heartbeat (:mod:`workloads.lifeline`), and how long it waits.

    Attributes:
        path: the heartbeat file the supervisor rewrites while it lives.
        timeout_s: seconds of an unchanged heartbeat that mean the supervisor is lost (1-600).
        grace_s: seconds a rank gets after SIGTERM to write what it measured (0-600).
        supervisor_pid: the supervisor's pid (> 1), for the parent-death fast path; None: none.
        supervisor_host: the supervisor's host name (its pid means something only there).
    """

    model_config = ConfigDict(extra="forbid")

    path: str
    timeout_s: float = TIMEOUT_S
    grace_s: float = GRACE_S
    supervisor_pid: int | None = None
    supervisor_host: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _checked(cls, value: Any) -> Any:
        """The entry's own words for what is wrong (a bad job file)."""
        if not isinstance(value, dict) or not isinstance(value.get("path"), str) or not value["path"]:
            raise ValueError("lifeline must be a mapping with a non-empty 'path' (the supervisor's heartbeat file)")
        pid = value.get("supervisor_pid")
        if pid is not None and (isinstance(pid, bool) or not isinstance(pid, int) or pid <= 1):
            raise ValueError(f"lifeline.supervisor_pid must be a process id > 1, got {pid!r}")
        return {
            **value,
            "timeout_s": _seconds(value.get("timeout_s", TIMEOUT_S), "timeout_s", 1.0, 600.0),
            "grace_s": _seconds(value.get("grace_s", GRACE_S), "grace_s", 0.0, 600.0),
        }


class PlacementSlot(BaseModel):
    """One local rank's NUMA slot: its (pseudo-)node, the CPUs it is bound to and its memory nodes (cpulists)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    node: str = Field(pattern=r"^[0-9]+$")
    cpus: str = Field(pattern=r"^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$")
    mems: str = Field(pattern=r"^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$")


class RankJob(BaseModel):
    """One run's job, as every rank of it reads it.

    Attributes:
        workload: the registered workload name (``workloads.registry``).
        params: the workload's parameters, validated on the rank by its params model.
        windows: the warm-up and measurement windows and the sampler's period.
        memory_limit_bytes: an address-space limit (RLIMIT_AS) of the rank, or None, so a run
            that needs too much memory fails with a clear error instead of waking the OOM killer.
        placement: torchrun with NUMA placement: one slot per local rank, bound by numactl.
        run_uid: the run's identity, held by every rank's harness.
        deadline_unix_s: with ``windows.budget_s``, the instant (seconds since the epoch) the
            budget ends, counted from the command's start.
        lifeline: the supervisor's heartbeat; None: the rank runs without one.
    """

    model_config = ConfigDict(extra="forbid")

    workload: str = Field(min_length=1, max_length=200)
    params: dict[str, Any] = Field(default_factory=dict)
    windows: WindowsConfig
    memory_limit_bytes: int | None = Field(None, gt=0)
    placement: list[PlacementSlot] = Field(default_factory=list)
    run_uid: str | None = Field(None, pattern=r"^[0-9a-f]{8,64}$")
    deadline_unix_s: float | None = Field(None, allow_inf_nan=False)
    lifeline: LifelineEntry | None = None

    def write(self, path: Path) -> None:
        """Write the job file atomically (temp file + rename).

        Raises:
            OSError: the run directory cannot be written.
        """
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(self.model_dump_json(indent=1))
        os.replace(tmp, path)

    @classmethod
    def read(cls, path: Path) -> RankJob:
        """The job in ``path``.

        Raises:
            ValueError: the file is missing, too large, not JSON, or not a job (the message says what).
        """
        try:
            with path.open("rb") as f:
                data = f.read(MAX_JOB_BYTES + 1)
        except OSError as exc:
            raise ValueError(f"cannot read the job file: {exc}") from None
        if len(data) > MAX_JOB_BYTES:
            raise ValueError(f"the job file is over {MAX_JOB_BYTES} bytes; it is not one trainbench wrote")
        try:
            return cls.model_validate_json(data)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'file'}: {e['msg']}" for e in exc.errors())
            raise ValueError(problems) from None
