"""Workload specs (YAML in the repo, checked by a schema), profiles and ``--set`` overrides.

A spec names a registered workload, the image it runs in, and profiles. A profile
fixes the windows, the workload's params and the launch environment. Overrides
``key=value`` are applied on top and the result is validated before anything starts.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from workloads import registry

SPECS_DIR = Path(__file__).resolve().parent.parent / "workloads" / "specs"
"""Where the official workload specs live (versioned with the code)."""

SPEC_VERSION = 1


class ConfigError(ValueError):
    """A spec, profile or override that cannot give a valid run; the message says what to change."""


class WindowsConfig(BaseModel):
    """Warm-up and measurement windows (each ends when BOTH minimums are met)."""

    model_config = ConfigDict(extra="forbid")

    warmup_steps: int = Field(ge=1, description="minimum warm-up steps")
    warmup_seconds: float = Field(ge=0, allow_inf_nan=False, description="minimum warm-up seconds")
    measure_steps: int = Field(ge=1, description="minimum measured steps")
    measure_seconds: float = Field(ge=0, allow_inf_nan=False, description="minimum measured seconds")
    repeats: int = Field(1, ge=1, le=1000, description="warm-up + measurement pairs")
    sampler_interval_s: float = Field(0.5, gt=0, le=60, allow_inf_nan=False, description="utilization sampling period")


class LaunchConfig(BaseModel):
    """How the rank process is started: launcher, allocator and OpenMP settings.

    ``None`` leaves a setting to the library default (and to the caller's environment).
    """

    model_config = ConfigDict(extra="forbid")

    launcher: Literal["inline", "run_cpu", "torchrun", "horovodrun"] = "inline"
    allocator: Literal["default", "jemalloc", "tcmalloc"] = "default"
    malloc_conf: str | None = Field(None, description="MALLOC_CONF for jemalloc")
    omp_num_threads: int | None = Field(None, ge=1)
    kmp_blocktime: int | None = Field(None, ge=0)
    kmp_affinity: str | None = None
    omp_proc_bind: str | None = None
    omp_places: str | None = None
    cpus: str | None = Field(
        None, pattern=r"^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$", description="cpulist to bind the rank to, e.g. 0-3,8"
    )
    numa_nodes: str | None = Field(
        None, pattern=r"^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$", description="NUMA nodes for CPUs and memory, e.g. 0"
    )
    topology: str | None = Field(
        None,
        pattern=r"^[0-9,-]+(@[0-9,-]+)?(;[0-9,-]+(@[0-9,-]+)?)*$",
        description="torchrun: NUMA nodes to use instead of sysfs's, as cpulists separated by ';', each "
        "optionally @memory-nodes, e.g. '0;1' = two pseudo-nodes of one core each",
    )
    nnodes: int = Field(1, ge=1, description="torchrun: number of hosts")
    nproc_per_node: int | None = Field(
        None,
        ge=1,
        le=1024,
        description="torchrun/horovodrun: ranks on this host, unbound (e.g. one per GPU); torchrun without it "
        "places one rank per NUMA node; horovodrun without it starts one rank per visible GPU, or 1",
    )
    hosts: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9_.-]+:[0-9]+(,[A-Za-z0-9_.-]+:[0-9]+)*$",
        description="horovodrun: -H host:slots,... (default localhost:nproc_per_node); other hosts are "
        "reached over ssh by horovodrun and must hold the same image or checkout",
    )
    rdzv_endpoint: str | None = Field(None, description="torchrun: host:port of the c10d rendezvous (nnodes > 1)")
    rdzv_id: str = Field("trainbench", pattern=r"^[A-Za-z0-9_.-]+$", description="torchrun: rendezvous id")
    compare_single: bool = Field(
        True,
        description="torchrun with NUMA placement: also measure one process on all cores with the same global batch",
    )
    memory_limit_mb: int | None = Field(
        None, ge=256, description="address-space limit (RLIMIT_AS) of the rank, MiB; exceeding it is an OOM error"
    )
    startup_timeout_s: float = Field(
        1800.0,
        gt=0,
        allow_inf_nan=False,
        description="seconds from launch to the first finished step (imports, model build, compilation) before "
        "a rank counts as hung",
    )
    stall_timeout_s: float = Field(
        600.0,
        gt=0,
        allow_inf_nan=False,
        description="seconds between two finished steps before a rank counts as hung",
    )

    @field_validator("cpus", "numa_nodes", mode="before")
    @classmethod
    def _single_id(cls, value: object) -> object:
        """Accept a bare id (``--set numa_nodes=1`` parses as an int) as a one-element list."""
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


class Profile(BaseModel):
    """A named configuration of a workload."""

    model_config = ConfigDict(extra="forbid")

    description: str = ""
    windows: WindowsConfig
    params: dict[str, Any] = Field(default_factory=dict)
    launch: LaunchConfig = Field(default_factory=LaunchConfig)


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

    def job(self) -> dict[str, Any]:
        """The job file the rank process reads (``workloads.rank``)."""
        job: dict[str, Any] = {
            "workload": self.workload,
            "params": self.params,
            "windows": self.windows.model_dump(exclude={"sampler_interval_s"}),
            "sampler_interval_s": self.windows.sampler_interval_s,
        }
        if self.launch.memory_limit_mb is not None:
            job["memory_limit_bytes"] = self.launch.memory_limit_mb * 2**20
        return job

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


def _errors(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}" for e in exc.errors())


def load_spec(path: Path) -> WorkloadSpec:
    """Read and check one spec file.

    Raises:
        ConfigError: unreadable YAML, schema violation, a name that differs from the
            file name, an unknown workload, or a profile whose params are invalid.
    """
    from suite.validation.files import FileProblem, read_config_text

    try:
        raw = yaml.safe_load(read_config_text(path))
    except FileProblem as exc:
        raise ConfigError(f"{path}: cannot read spec: {exc.message}; {exc.fix}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: cannot read spec: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: a spec must be a mapping, got {type(raw).__name__}")
    try:
        spec = WorkloadSpec.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"{path}: {_errors(exc)}") from exc
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
            raise ConfigError(f"{path}: profile {pname!r}: {_errors(exc)}") from exc
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
        value = yaml.safe_load(text) if text.strip() else None
    except yaml.YAMLError:
        value = text
    return key, value


def _apply(doc: dict[str, Any], key: str, value: Any, param_keys: set[str]) -> None:
    sections = {
        "params": param_keys,
        "windows": set(WindowsConfig.model_fields),
        "launch": set(LaunchConfig.model_fields),
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


def resolve(
    name: str, profile: str | None = None, overrides: list[str] | None = None, directory: Path = SPECS_DIR
) -> RunConfig:
    """Spec + profile + overrides -> a validated :class:`RunConfig`.

    Raises:
        ConfigError: unknown workload or profile, malformed or unknown override,
            or values that the windows, launch or workload params schema refuse.
    """
    spec = get_spec(name, directory)
    pname = profile or spec.default_profile
    if pname not in spec.profiles:
        raise ConfigError(f"workload {name!r} has no profile {pname!r}; profiles: {', '.join(sorted(spec.profiles))}")
    entry = registry.get(spec.workload)
    doc = copy.deepcopy(spec.profiles[pname].model_dump())
    for item in overrides or []:
        key, value = _parse_override(item)
        _apply(doc, key, value, set(entry.params_model.model_fields))
    try:
        windows = WindowsConfig.model_validate(doc["windows"])
        launch = LaunchConfig.model_validate(doc["launch"])
        params = entry.params_model.model_validate(doc["params"])
    except ValidationError as exc:
        raise ConfigError(f"invalid configuration for {name} ({pname}): {_errors(exc)}") from exc
    launch = _launcher_for_engine(launch, params, overrides or [], f"{name} ({pname})")
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


def _launcher_for_engine(launch: LaunchConfig, params: BaseModel, overrides: list[str], where: str) -> LaunchConfig:
    """The launcher a workload's engine needs (params with a ``launcher()`` method, e.g. ``engine``).

    ``--set engine=ddp`` switches the profile's launcher to torchrun; a launcher set
    explicitly by an override that contradicts the engine is an error.

    Raises:
        ConfigError: an explicit ``launcher=`` override does not match the engine.
    """
    needed = getattr(params, "launcher", None)
    if not callable(needed):
        return launch
    want = str(needed())
    if launch.launcher == want:
        return launch
    explicit = any(o.partition("=")[0].strip() in ("launcher", "launch.launcher") for o in overrides)
    if explicit:
        engine = getattr(params, "engine", "?")
        raise ConfigError(
            f"invalid configuration for {where}: engine={engine} is started by launcher={want}, "
            f"not {launch.launcher}; drop the launcher override or set launcher={want}"
        )
    return launch.model_copy(update={"launcher": want})
