"""The resolved configuration of one run: its windows, its launch settings and its workload params.

The launch settings are the variant of the run's launcher (:mod:`suite.launchers`); the
windows are the rank's (:class:`workloads.job.WindowsConfig`); the params are validated by
the workload's own params model (``suite.specs.resolve``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from suite.launchers import LaunchConfig, default_launcher
from workloads.job import RankJob, WindowsConfig

__all__ = ["RunConfig", "WindowsConfig"]


class RunConfig(BaseModel):
    """A fully resolved run: spec + profile + overrides, validated."""

    model_config = ConfigDict(extra="forbid")

    workload: str
    profile: str
    image: str
    requires_gpu: bool = False
    windows: WindowsConfig
    params: dict[str, Any]
    launch: LaunchConfig
    overrides: list[str]

    @field_validator("launch", mode="before")
    @classmethod
    def _launch_default(cls, value: object) -> object:
        return default_launcher(value)

    def job(self) -> RankJob:
        """The job the ranks read (:class:`workloads.job.RankJob`); the runtime adds the run's identity,
        placement, deadline and lifeline."""
        limit = self.launch.memory_limit_mb
        return RankJob(
            workload=self.workload,
            params=self.params,
            windows=self.windows,
            memory_limit_bytes=limit * 2**20 if limit is not None else None,
        )

    def flat_params(self) -> dict[str, str]:
        """Every setting as ``section.key -> str`` (for MLflow params)."""
        out: dict[str, str] = {"profile": self.profile}
        for section, values in (
            ("params", self.params),
            ("windows", self.windows.model_dump()),
            ("launch", self.launch.model_dump()),
        ):
            for k, v in values.items():
                out[f"{section}.{k}"] = str(v)
        return out
