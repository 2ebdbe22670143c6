"""Run-config files: a workload, a profile and ``--set`` overrides, kept so a config can be run again.

``trainbench ladder`` writes its best rung as such a file and ``trainbench run --config
FILE`` runs it. The file holds what a user would type, not the resolved config, so it is
resolved against the workload spec of the trainbench that runs it (a config from an older
trainbench keeps meaning the same settings, and an invalid one fails before anything
starts) and its runs are ordinary runs of that profile with those overrides, which
``trainbench submit`` takes like any other. Format (JSON, read with the bounded strict
reader of :mod:`suite.files`)::

    {"kind": "trainbench.run-config", "config_version": 1,
     "workload": "resnet50-cpu", "profile": "quick",
     "overrides": ["precision=bf16", "channels_last=true"],
     "note": "free text: where it came from",
     "best": {"device": "NVIDIA H100 80GB HBM3", "world_size": 1, "rung": "+ batch 512",
              "throughput_samples_per_s": 5890.0, "result": "results/.../result.json"}}

``best`` (optional) is what ``trainbench ladder`` measured with the config: a later run of the
workload on the same device and world size prints how far it is from it (:mod:`suite.ladder.best`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from suite.errors import BadInput, validation_problems
from suite.files import FileProblem, read_json

KIND = "trainbench.run-config"


class ConfigFileError(BadInput, ValueError):
    """A run-config file that cannot be read or is not one (exit 2)."""


class LadderBest(BaseModel):
    """What the ladder measured with its best config.

    Attributes:
        device: the device it ran on (the GPU's name, else the CPU's model; :func:`suite.ladder.best.device_name`).
        world_size: its ranks.
        rung: the best rung's label, e.g. ``+ CUDA graphs``.
        throughput_samples_per_s: its throughput, samples/s (all ranks).
        result: its result file, or None.
    """

    model_config = ConfigDict(extra="forbid")

    device: str = Field(min_length=1, max_length=500)
    world_size: int = Field(ge=1, le=1_000_000)
    rung: str = Field(max_length=200)
    throughput_samples_per_s: float = Field(gt=0, allow_inf_nan=False)
    result: str | None = Field(None, max_length=4096)


class RunConfigFile(BaseModel):
    """The content of a run-config file (unknown keys are refused).

    Attributes:
        workload: the workload spec's name (``trainbench list``).
        profile: its profile, or None for the spec's default.
        overrides: ``key=value`` settings applied on top of the profile, in order.
        note: where the config came from (e.g. the ladder rung and its throughput).
        best: what the ladder measured with it, or None.
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["trainbench.run-config"] = "trainbench.run-config"
    config_version: Literal[1] = 1
    workload: str = Field(min_length=1, max_length=200)
    profile: str | None = Field(None, max_length=200)
    overrides: list[str] = Field(default_factory=list, max_length=1000)
    note: str = Field("", max_length=10_000)
    best: LadderBest | None = None


def read_config_file(path: Path) -> RunConfigFile:
    """Read a run-config file.

    Raises:
        ConfigFileError: unreadable, oversized, not strict JSON, or not a run config (the
            message says which key is wrong).
    """
    try:
        doc = read_json(path)
    except FileProblem as exc:
        raise ConfigFileError(f"{path}: cannot read the run config: {exc.message}; {exc.fix}") from exc
    try:
        return RunConfigFile.model_validate(doc)
    except ValidationError as exc:
        what = validation_problems(exc)
        raise ConfigFileError(
            f"{path}: not a trainbench run config ({what}); it needs workload, profile and overrides, "
            "as `trainbench ladder` writes it"
        ) from exc


def write_config_file(path: Path, config: RunConfigFile) -> Path:
    """Write ``config`` as indented JSON; returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config.model_dump(mode="json"), indent=1) + "\n")
    return path


def from_config_file(
    workload: str | None, path: Path | None, profile: str | None, overrides: tuple[str, ...]
) -> tuple[str, str | None, tuple[str, ...]]:
    """(workload, profile, overrides) from the arguments and, with --config, the file's (its overrides first).

    Raises:
        BadInput: neither WORKLOAD nor --config, or a WORKLOAD that is not the file's.
        suite.run.config_file.ConfigFileError: the file cannot be read or is not a run config.
    """
    if path is None:
        if workload is None:
            raise BadInput("name the WORKLOAD to run (see `trainbench list`), or pass --config FILE")
        return workload, profile, overrides
    doc = read_config_file(path)
    if workload is not None and workload != doc.workload:
        raise BadInput(f"{path} runs workload {doc.workload!r}, not {workload!r}; drop WORKLOAD or pass another file")
    return doc.workload, profile or doc.profile, (*doc.overrides, *overrides)
