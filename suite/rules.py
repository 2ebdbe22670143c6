"""Submission rules: which suite versions count, how many runs a score needs, and the closed division.

The rules live in a versioned YAML file (``suite/data/division-rules.yaml``). A run is in
the **closed** division when its resolved config equals the workload's official profile
except for the listed tunables (threads, workers, allocator, compile, OpenMP and
placement settings); anything else is the **open** division. The runner labels each
result with :func:`division_for`, and the validator re-checks that label.

A setting the official profile leaves to the hardware (``precision: auto``) is not a
tunable but a decision: a closed run says ``auto``, or exactly what ``auto`` chooses on the
hardware the run recorded (:func:`auto_precision`; so results from before ``auto``, which
said ``bf16`` on a native-bf16 CPU, stay closed). A run whose bf16 was emulated is never
closed.

This module is shared by the run (``suite.run``) and the validator (``suite.validation``),
so it imports neither.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.precision import recorded_choice
from suite.errors import BadInput, validation_problems
from suite.files import FileProblem, read_yaml
from suite.launchers import LAUNCHERS
from suite.specs import SPECS_DIR, ConfigError, RunConfig, load_specs, resolve

RULES_PATH = Path(__file__).resolve().parent / "data" / "division-rules.yaml"
"""The rules file shipped with trainbench."""

Division = Literal["closed", "open"]
ScoreMethod = Literal["median", "olympic_mean"]


class RulesError(BadInput, ValueError):
    """The rules file is unreadable or invalid, or a workload has no official config."""


class WorkloadRules(BaseModel):
    """Per-workload exceptions to the general rules."""

    model_config = ConfigDict(extra="forbid")

    min_runs: int | None = Field(None, ge=1)
    score: ScoreMethod | None = None
    extra_tunables: list[str] = Field(default_factory=list)


class ClosedRules(BaseModel):
    """What the closed division allows to change from the official profile."""

    model_config = ConfigDict(extra="forbid")

    tunables: list[str] = Field(description="'section.setting' keys of the resolved config")


class Rules(BaseModel):
    """The rules file (format ``rules_version`` 1)."""

    model_config = ConfigDict(extra="forbid")

    rules_version: Literal[1]
    suite_versions: list[str] = Field(min_length=1, description="accepted release series, 'major.minor'")
    official_profile: str
    min_runs: int = Field(ge=1)
    score: ScoreMethod
    closed: ClosedRules
    workloads: dict[str, WorkloadRules] = Field(default_factory=dict)

    def tunables(self, workload: str) -> set[str]:
        """Keys a closed-division run of ``workload`` may change."""
        extra = self.workloads.get(workload, WorkloadRules()).extra_tunables
        return {*self.closed.tunables, *extra}

    def min_runs_for(self, workload: str) -> int:
        """Runs a score of ``workload`` needs."""
        rule = self.workloads.get(workload)
        return rule.min_runs if rule is not None and rule.min_runs is not None else self.min_runs

    def score_for(self, workload: str) -> ScoreMethod:
        """How the score of ``workload`` is taken over its runs."""
        rule = self.workloads.get(workload)
        return rule.score if rule is not None and rule.score is not None else self.score

    def accepts_suite_version(self, version: str) -> bool:
        """True when ``version`` (e.g. ``0.1.0``) belongs to an accepted release series."""
        return any(version == s or version.startswith(s + ".") for s in self.suite_versions)


@functools.lru_cache(maxsize=8)
def load_rules(path: Path = RULES_PATH) -> Rules:
    """Read and check the rules file (bounded, strict YAML: :mod:`suite.files`).

    Raises:
        RulesError: an unreadable or oversized file, unparseable YAML, or content that
            does not fit :class:`Rules`.
    """
    try:
        raw = read_yaml(path)
    except FileProblem as exc:
        raise RulesError(f"{path}: cannot read the rules file: {exc.message}; {exc.fix}") from exc
    try:
        return Rules.model_validate(raw)
    except ValidationError as exc:
        problems = validation_problems(exc)
        raise RulesError(f"{path}: invalid rules: {problems}") from exc


def flatten_config(config: RunConfig) -> dict[str, Any]:
    """The config as ``{"profile": ..., "params.batch_size": 128, "launch.allocator": ...}``.

    Top-level scalars keep their names; the ``params``, ``windows`` and ``launch``
    sections become ``section.key``. The ``overrides`` list is left out: what counts is
    the resolved value, not how it was typed.
    """
    out: dict[str, Any] = {}
    for key, value in config.model_dump(mode="json").items():
        if key == "overrides":
            continue
        if isinstance(value, dict):
            for sub, v in value.items():
                out[f"{key}.{sub}"] = v
        else:
            out[key] = value
    return out


@dataclass(frozen=True)
class Deviation:
    """One setting where a config differs from the official one.

    Attributes:
        key: ``section.setting``.
        official: the official profile's value (None when the official config lacks the key).
        actual: the run's value.
    """

    key: str
    official: Any
    actual: Any


def official_config(workload: str, rules: Rules, specs_dir: Path = SPECS_DIR) -> RunConfig:
    """The closed-division config of ``workload``: its spec's official profile, no overrides.

    Raises:
        RulesError: no spec runs ``workload``, several do, or the spec has no official profile.
    """
    try:
        specs = load_specs(specs_dir)
    except ConfigError as exc:
        raise RulesError(str(exc)) from exc
    matching = [s for s in specs.values() if s.name == workload] or [
        s for s in specs.values() if s.workload == workload
    ]
    if len(matching) != 1:
        found = ", ".join(s.name for s in matching) or "none"
        raise RulesError(f"workload {workload!r}: expected one spec in {specs_dir}, found {found}")
    spec = matching[0]
    if rules.official_profile not in spec.profiles:
        raise RulesError(f"workload {workload!r} has no {rules.official_profile!r} profile, so no closed division")
    try:
        return resolve(spec.name, rules.official_profile, [], directory=specs_dir)
    except ConfigError as exc:
        raise RulesError(str(exc)) from exc


def auto_precision(environment: Mapping[str, Any]) -> str | None:
    """What ``precision=auto`` chooses on the hardware a result recorded: ``bf16`` or ``fp32``.

    Decided by the run's own rule (:func:`harness.precision.choose_precision`) on the ISA rebuilt
    from what the result recorded (:func:`harness.precision.isa_from_record`: the CPU's own
    features and the caps, never the stored ``bf16_native``; results written before the ISA
    record give their CPU flags and ``ONEDNN_MAX_CPU_ISA``). None when neither is recorded.
    """
    choice = recorded_choice("auto", environment)
    return None if choice is None else choice.chosen


def _decided(key: str, official: Any, actual: Any, environment: Mapping[str, Any] | None) -> bool:
    """A setting the official profile leaves to the hardware, set to what the hardware decides.

    ``params.precision: auto``: ``auto``, or what auto chooses on the recorded hardware. Without
    an environment (a caller holding only the config) any precision auto can choose counts as
    decided: it cannot be judged, and the caller that has the result should pass it.
    """
    if key != "params.precision" or official != "auto":
        return False
    if actual == "auto":
        return True
    if environment is None:
        return actual in ("bf16", "fp32")
    return bool(actual == auto_precision(environment))


def closed_deviations(
    config: RunConfig,
    rules: Rules,
    specs_dir: Path = SPECS_DIR,
    *,
    environment: Mapping[str, Any] | None = None,
    bf16_emulated: bool | None = None,
) -> list[Deviation]:
    """Settings of ``config`` that differ from the official config and are not tunables.

    An empty list means the config qualifies for the closed division. A launch setting
    that only one side's launcher has counts as left at its default on the other side
    (:func:`launch_defaults`), so a change of launcher alone is judged as before the
    launch variants: by ``launch.launcher`` and any setting actually changed.

    Args:
        environment: the result's recorded environment; with it, a precision other than
            ``auto`` must be what ``auto`` chooses on that hardware (:func:`auto_precision`).
        bf16_emulated: whether the run's bf16 was emulated, as its caller decided it: the runner from
            its ranks' decisions, the validator by the one rule on the recorded hardware
            (:func:`suite.labels.bf16_emulated`); this module never judges it itself. True is always
            a deviation (``bf16_emulated``), since an emulated run measures the emulation, not the
            machine.

    Raises:
        RulesError: the workload has no official config (see :func:`official_config`).
    """
    official = flatten_config(official_config(config.workload, rules, specs_dir))
    actual = flatten_config(config)
    tunables = rules.tunables(config.workload)
    defaults = launch_defaults()
    out = []
    for key in sorted(set(official) | set(actual)):
        was, now = official.get(key, defaults.get(key)), actual.get(key, defaults.get(key))
        if key not in tunables and was != now and not _decided(key, was, now, environment):
            out.append(Deviation(key, was, now))
    if bf16_emulated:
        out.append(Deviation("bf16_emulated", False, True))
    return out


def launch_defaults() -> dict[str, Any]:
    """``launch.<setting> -> default`` of every launcher's settings (one default per setting)."""
    return {
        f"launch.{key}": field.default
        for variant in LAUNCHERS.values()
        for key, field in variant.model_fields.items()
        if key != "launcher"
    }


def division_for(
    config: RunConfig,
    rules: Rules | None = None,
    specs_dir: Path = SPECS_DIR,
    *,
    environment: Mapping[str, Any] | None = None,
    bf16_emulated: bool | None = None,
) -> Division:
    """``closed`` when ``config`` is the official config up to the tunables (and the hardware's
    decisions, see :func:`closed_deviations`), else ``open``.

    A workload without an official profile has no closed division, so its runs are open.

    Raises:
        RulesError: the rules file is invalid.
    """
    rules = rules or load_rules()
    try:
        found = closed_deviations(config, rules, specs_dir, environment=environment, bf16_emulated=bf16_emulated)
    except RulesError:
        return "open"
    return "open" if found else "closed"
