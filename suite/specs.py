"""Workload specs (YAML in the repo, checked by a schema), profiles and ``--set`` overrides.

A spec names a registered workload, the image it runs in, and profiles. A profile
fixes the windows, the workload's params and the launch environment. Overrides
``key=value`` are applied on top and the result (a :class:`suite.config.RunConfig`) is
validated before anything starts.

A launch setting belongs to some launchers only (:mod:`suite.config`). One set with
``--set`` that the run's launcher does not have is an error; one the profile sets for its
own launcher is left out when an override or the workload's engine picks another launcher.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from suite.config import RunConfig
from suite.errors import BadInput, validation_problems
from suite.files import FileProblem, parse_yaml, read_yaml
from suite.launchers import LAUNCHERS, InlineLaunch, LaunchBase, LaunchConfig, default_launcher, launch_keys
from workloads import registry
from workloads.job import WindowsConfig

__all__ = [
    "SPECS_DIR",
    "SPEC_VERSION",
    "ConfigError",
    "Profile",
    "RunConfig",
    "WindowsConfig",
    "WorkloadSpec",
    "get_spec",
    "load_spec",
    "load_specs",
    "resolve",
]

SPECS_DIR = Path(__file__).resolve().parent.parent / "workloads" / "specs"
"""Where the official workload specs live (versioned with the code)."""

SPEC_VERSION = 1


class ConfigError(BadInput, ValueError):
    """A spec, profile or override that cannot give a valid run; the message says what to change."""


class Profile(BaseModel):
    """A named configuration of a workload."""

    model_config = ConfigDict(extra="forbid")

    description: str = ""
    windows: WindowsConfig
    params: dict[str, Any] = Field(default_factory=dict)
    launch: LaunchConfig = Field(default_factory=InlineLaunch)

    @field_validator("launch", mode="before")
    @classmethod
    def _launch_default(cls, value: object) -> object:
        return default_launcher(value)


class WorkloadSpec(BaseModel):
    """A workload spec file."""

    model_config = ConfigDict(extra="forbid")

    spec_version: Literal[1]
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    workload: str
    description: str
    image: str
    requires_gpu: bool = False
    default_profile: str
    profiles: dict[str, Profile]


def load_spec(path: Path) -> WorkloadSpec:
    """Read and check one spec file.

    Raises:
        ConfigError: unreadable YAML, schema violation, a name that differs from the
            file name, an unknown workload, or a profile whose params are invalid.
    """
    try:
        raw = read_yaml(path)
    except FileProblem as exc:
        raise ConfigError(f"{path}: cannot read spec: {exc.message}; {exc.fix}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: a spec must be a mapping, got {type(raw).__name__}")
    try:
        spec = WorkloadSpec.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"{path}: {validation_problems(exc)}") from exc
    if spec.name != path.stem:
        raise ConfigError(f"{path}: spec name {spec.name!r} must match the file name {path.stem!r}")
    if spec.default_profile not in spec.profiles:
        raise ConfigError(f"{path}: default_profile {spec.default_profile!r} is not one of {sorted(spec.profiles)}")
    try:
        entry = registry.get(spec.workload)
    except registry.UnknownWorkloadError as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    for pname, profile in spec.profiles.items():
        try:
            entry.params_model.model_validate(profile.params)
        except ValidationError as exc:
            raise ConfigError(f"{path}: profile {pname!r}: {validation_problems(exc)}") from exc
    return spec


def load_specs(directory: Path = SPECS_DIR) -> dict[str, WorkloadSpec]:
    """Every spec in ``directory``; any invalid file is an error, never silently skipped."""
    specs: dict[str, WorkloadSpec] = {}
    for path in sorted(directory.glob("*.yaml")):
        spec = load_spec(path)
        specs[spec.name] = spec
    if not specs:
        raise ConfigError(f"no workload specs found in {directory}")
    return specs


def get_spec(name: str, directory: Path = SPECS_DIR) -> WorkloadSpec:
    """The spec called ``name``; the error lists the valid names."""
    specs = load_specs(directory)
    if name not in specs:
        raise ConfigError(f"unknown workload {name!r}; valid workloads: {', '.join(sorted(specs))}")
    return specs[name]


_YAML11_WORDS = frozenset({"on", "off", "yes", "no", "y", "n"})


def _parse_override(item: str) -> tuple[str, Any]:
    if "=" not in item:
        raise ConfigError(f"--set {item!r}: expected key=value, e.g. --set batch_size=32")
    key, _, text = item.partition("=")
    key = key.strip()
    if not key:
        raise ConfigError(f"--set {item!r}: the key is empty")
    if text.strip().lower() in _YAML11_WORDS:
        return key, text.strip()  # YAML 1.1 reads off/on/yes/no as booleans; pydantic still takes them for bool fields
    try:
        value = parse_yaml(text) if text.strip() else None
    except FileProblem:
        value = text
    return key, value


def _apply(doc: dict[str, Any], key: str, value: Any, param_keys: set[str]) -> tuple[str, str]:
    """Set ``key`` (``setting`` or ``section.setting``) in ``doc``; returns ``(section, setting)``."""
    sections = {
        "params": param_keys,
        "windows": set(WindowsConfig.model_fields),
        "launch": set(launch_keys()),
    }
    if "." in key:
        section, _, field = key.partition(".")
        if section not in sections:
            raise ConfigError(f"--set {key}: unknown section {section!r}; use one of {sorted(sections)}")
    else:
        owners = [s for s, keys in sections.items() if key in keys]
        if not owners:
            valid = sorted(set().union(*sections.values()))
            raise ConfigError(f"--set {key}: unknown setting; valid settings: {', '.join(valid)}")
        if len(owners) > 1:
            raise ConfigError(f"--set {key}: ambiguous; write {' or '.join(f'{o}.{key}' for o in owners)}")
        section, field = owners[0], key
    if field not in sections[section]:
        raise ConfigError(
            f"--set {key}: {section} has no setting {field!r}; valid: {', '.join(sorted(sections[section]))}"
        )
    doc.setdefault(section, {})[field] = value
    return section, field


def resolve(
    name: str, profile: str | None = None, overrides: list[str] | None = None, directory: Path = SPECS_DIR
) -> RunConfig:
    """Spec + profile + overrides -> a validated :class:`RunConfig`.

    Raises:
        ConfigError: unknown workload or profile, malformed or unknown override, a launch
            setting given with ``--set`` that the run's launcher does not have, or values
            that the windows, launch or workload params schema refuse.
    """
    spec = get_spec(name, directory)
    pname = profile or spec.default_profile
    if pname not in spec.profiles:
        raise ConfigError(f"workload {name!r} has no profile {pname!r}; profiles: {', '.join(sorted(spec.profiles))}")
    entry = registry.get(spec.workload)
    doc = copy.deepcopy(spec.profiles[pname].model_dump())
    explicit: set[str] = set()
    for item in overrides or []:
        key, value = _parse_override(item)
        section, field = _apply(doc, key, value, set(entry.params_model.model_fields))
        if section == "launch":
            explicit.add(field)
    where = f"{name} ({pname})"
    try:
        windows = WindowsConfig.model_validate(doc["windows"])
        params = entry.params_model.model_validate(doc["params"])
    except ValidationError as exc:
        raise ConfigError(f"invalid configuration for {where}: {validation_problems(exc)}") from exc
    launcher = _launcher_for_engine(str(doc["launch"]["launcher"]), params, "launcher" in explicit, where)
    launch = _launch_variant(doc["launch"], launcher, explicit, where)
    return RunConfig(
        workload=spec.workload,
        profile=pname,
        image=spec.image,
        requires_gpu=spec.requires_gpu and getattr(params, "device", None) != "cpu",
        windows=windows,
        params=params.model_dump(),
        launch=launch,
        overrides=list(overrides or []),
    )


def _launch_variant(values: dict[str, Any], launcher: str, explicit: set[str], where: str) -> LaunchBase:
    """``values`` as the variant of ``launcher``.

    Settings the profile gave for its own launcher that ``launcher`` lacks are left out
    (the override or the engine chose another launcher); such a setting given with
    ``--set`` is an error.

    Raises:
        ConfigError: an unknown launcher, an explicit setting the launcher lacks, or a
            value its variant refuses.
    """
    variant = LAUNCHERS.get(launcher)
    if variant is None:
        names = [repr(n) for n in LAUNCHERS]
        valid = f"{', '.join(names[:-1])} or {names[-1]}"
        raise ConfigError(f"invalid configuration for {where}: launcher: Input should be {valid}")
    owners = launch_keys()
    foreign = sorted(k for k in values if k not in variant.model_fields)
    given = [k for k in foreign if k in explicit]
    if given:
        key = given[0]
        raise ConfigError(
            f"invalid configuration for {where}: --set {key} applies to launcher="
            f"{' or '.join(owners.get(key, []))} only, and this run's launcher is {launcher}; "
            f"drop {key} or set launcher={owners[key][0] if owners.get(key) else launcher}"
        )
    kept = {k: v for k, v in values.items() if k in variant.model_fields}
    try:
        return variant.model_validate({**kept, "launcher": launcher})
    except ValidationError as exc:
        raise ConfigError(f"invalid configuration for {where}: {validation_problems(exc)}") from exc


def _launcher_for_engine(launcher: str, params: BaseModel, explicit: bool, where: str) -> str:
    """The launcher a workload's engine needs (params with a ``launcher()`` method, e.g. ``engine``).

    ``--set engine=ddp`` switches the profile's launcher to torchrun; a launcher set
    explicitly by an override that contradicts the engine is an error.

    Raises:
        ConfigError: an explicit ``launcher=`` override does not match the engine.
    """
    needed = getattr(params, "launcher", None)
    if not callable(needed):
        return launcher
    want = str(needed())
    if launcher == want:
        return launcher
    if explicit:
        engine = getattr(params, "engine", "?")
        raise ConfigError(
            f"invalid configuration for {where}: engine={engine} is started by launcher={want}, "
            f"not {launcher}; drop the launcher override or set launcher={want}"
        )
    return want
