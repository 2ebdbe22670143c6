"""System descriptions: ``submissions/<submitter>/systems/<system>.json``.

A system description says what the results ran on (hardware, instance type), what it
costs (USD per hour, with the source of the price) and with which software (suite
version, container image digest, library versions). The validator checks that it is
complete and agrees with the environment each result recorded about itself.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from suite.results import Result
from suite.systems.mlperf_fields import MLPerfSystemFields

SYSTEM_SCHEMA_VERSION = 1
SYSTEM_SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schemas" / f"system-v{SYSTEM_SCHEMA_VERSION}.schema.json"
MEMORY_TOLERANCE = 0.05
"""Relative difference allowed between described and recorded memory (firmware reserves some)."""
PRICE_CURRENCY = "USD"
PRICE_PER = "hour"
SYSTEM_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"


class Accelerator(BaseModel):
    """A kind of accelerator in the system."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(min_length=1, description="as the driver names it, e.g. 'NVIDIA A10G'")
    count: int = Field(ge=1)
    memory_bytes: int | None = Field(None, gt=0)


class Hardware(BaseModel):
    """The machine."""

    model_config = ConfigDict(extra="forbid")

    cpu_model: str = Field(min_length=1, description="as the results record it (py-cpuinfo brand)")
    cpu_vendor: str | None = None
    logical_cores: int = Field(ge=1, description="logical CPUs the runs could use")
    physical_cores: int | None = Field(None, ge=1)
    numa_nodes: int = Field(ge=1)
    memory_bytes: int = Field(gt=0, description="total memory, bytes")
    accelerators: list[Accelerator] = Field(default_factory=list)
    notes: str | None = None


class Instance(BaseModel):
    """Where the machine is rented, when it is (all None for an owned machine)."""

    model_config = ConfigDict(extra="forbid")

    provider: str | None = None
    instance_type: str | None = None
    region: str | None = None


class Price(BaseModel):
    """What an hour of the system costs, and where that figure comes from.

    ``usd_per_hour`` may be None only with a ``source`` that says why there is no price;
    samples per dollar is then not ranked. ``currency`` must be ``USD`` and ``per``
    ``hour`` (the validator reports anything else as a unit error).
    """

    model_config = ConfigDict(extra="forbid")

    usd_per_hour: float | None = Field(gt=0, allow_inf_nan=False)
    currency: str = Field(description="must be 'USD'")
    per: str = Field(description="must be 'hour'")
    pricing: Literal["on-demand", "spot", "reserved", "owned"] | None = None
    source: str = Field(min_length=1, description="citation of the price, or why there is none")
    date: str | None = Field(None, pattern=r"^\d{4}-(0[1-9]|1[0-2])$", description="month of the source, YYYY-MM")


class Software(BaseModel):
    """The software the results ran with."""

    model_config = ConfigDict(extra="forbid")

    suite_version: str = Field(min_length=1)
    runtime: Literal["local", "docker"]
    image: str | None = None
    image_digest: str | None = Field(None, description="container image id (sha256:...) for docker runs")
    os: str | None = None
    python: str = Field(min_length=1)
    libraries: dict[str, str] = Field(description="distribution -> version, e.g. torch: 2.14.1")


class SystemDescription(BaseModel):
    """A system description file (``schema_version`` 1)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    kind: Literal["trainbench.system"] = "trainbench.system"
    name: str = Field(pattern=SYSTEM_NAME_PATTERN, description="equals the file name without .json")
    submitter: str = Field(min_length=1)
    system_class: str | None = Field(None, description="a class of identical machines bands may be keyed by")
    description: str = Field(min_length=1)
    hardware: Hardware
    instance: Instance
    price: Price
    software: Software
    mlperf: MLPerfSystemFields | None = Field(
        None, description="MLPerf Training system-description fields (issue 17), for `trainbench export mlperf`"
    )

    def band_names(self) -> list[str]:
        """Names a reference band may use for this system, most specific first."""
        names = [self.name]
        for extra in (self.system_class, self.instance.instance_type):
            if extra and extra not in names:
                names.append(extra)
        return names


def json_schema() -> dict[str, Any]:
    """JSON Schema of the system description (generated from the model; committed as SYSTEM_SCHEMA_PATH)."""
    schema = SystemDescription.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://trainbench.dev/schemas/system-v{SYSTEM_SCHEMA_VERSION}.schema.json"
    return schema


def _get(doc: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(doc, dict):
            return None
        doc = doc.get(k)
    return doc


def recorded_accelerators(env: dict[str, Any]) -> Counter[str]:
    """GPU model -> count, from a result's environment."""
    devices = _get(env, "gpus", "devices")
    if not isinstance(devices, list):
        return Counter()
    return Counter(str(d.get("name")) for d in devices if isinstance(d, dict))


def describe(
    result: Result,
    name: str,
    submitter: str,
    price: Price,
    description: str,
    system_class: str | None = None,
    instance: Instance | None = None,
) -> SystemDescription:
    """A system description filled in from what ``result`` recorded about its machine.

    Raises:
        pydantic.ValidationError: the result lacks what a description needs (e.g. no CPU model).
    """
    env = result.environment
    accel = [Accelerator(model=m, count=c) for m, c in sorted(recorded_accelerators(env).items())]
    numa = _get(env, "numa_nodes")
    runtime = result.runtime
    return SystemDescription(
        name=name,
        submitter=submitter,
        system_class=system_class,
        description=description,
        hardware=Hardware(
            cpu_model=str(_get(env, "cpu", "model")),
            cpu_vendor=_get(env, "cpu", "vendor"),
            logical_cores=int(_get(env, "cpu", "logical_cores") or 0),
            physical_cores=_get(env, "cpu", "physical_cores"),
            numa_nodes=len(numa) if isinstance(numa, list) and numa else 1,
            memory_bytes=int(_get(env, "memory", "total_bytes") or 0),
            accelerators=accel,
        ),
        instance=instance or Instance(),
        price=price,
        software=Software(
            suite_version=result.provenance.suite_version,
            runtime=runtime.kind,
            image=runtime.image,
            image_digest=runtime.image_id,
            os=_get(env, "host", "os"),
            python=str(_get(env, "python", "version")),
            libraries={k: str(v) for k, v in (_get(env, "libraries") or {}).items() if k in ("torch", "torchvision")},
        ),
    )


def inconsistencies(system: SystemDescription, result: Result) -> list[tuple[str, str]]:
    """Where ``system`` contradicts what ``result`` recorded: ``[(json path in the result, message)]``."""
    env = result.environment
    out: list[tuple[str, str]] = []
    hw, sw = system.hardware, system.software

    def differ(path: str, what: str, described: Any, recorded: Any) -> None:
        out.append((path, f"{what}: the system description says {described!r}, the run recorded {recorded!r}"))

    model = _get(env, "cpu", "model")
    if model != hw.cpu_model:
        differ("environment/cpu/model", "CPU model", hw.cpu_model, model)
    cores = _get(env, "cpu", "logical_cores")
    if cores != hw.logical_cores:
        differ("environment/cpu/logical_cores", "logical cores", hw.logical_cores, cores)
    numa = _get(env, "numa_nodes")
    if isinstance(numa, list) and numa and len(numa) != hw.numa_nodes:
        differ("environment/numa_nodes", "NUMA nodes", hw.numa_nodes, len(numa))
    mem = _get(env, "memory", "total_bytes")
    if not isinstance(mem, int) or abs(mem - hw.memory_bytes) > MEMORY_TOLERANCE * hw.memory_bytes:
        differ("environment/memory/total_bytes", f"memory (within {MEMORY_TOLERANCE:.0%})", hw.memory_bytes, mem)
    described_acc = Counter({a.model: a.count for a in hw.accelerators})
    if described_acc != recorded_accelerators(env):
        differ("environment/gpus", "accelerators", dict(described_acc), dict(recorded_accelerators(env)))
    if result.provenance.suite_version != sw.suite_version:
        differ("provenance/suite_version", "suite version", sw.suite_version, result.provenance.suite_version)
    python = _get(env, "python", "version")
    if python != sw.python:
        differ("environment/python/version", "Python version", sw.python, python)
    libs = _get(env, "libraries")
    for lib, version in sw.libraries.items():
        got = libs.get(lib) if isinstance(libs, dict) else None
        if got != version:
            differ(f"environment/libraries/{lib}", f"{lib} version", version, got)
    if result.runtime.kind != sw.runtime:
        differ("runtime/kind", "runtime", sw.runtime, result.runtime.kind)
    elif sw.runtime == "docker" and result.runtime.image_id != sw.image_digest:
        differ("runtime/image_id", "container image digest", sw.image_digest, result.runtime.image_id)
    return out


def unit_problems(system: SystemDescription) -> list[tuple[str, str]]:
    """Unit errors in a system description: ``[(json path, message)]``."""
    out = []
    if system.price.currency != PRICE_CURRENCY:
        out.append(("price/currency", f"price currency is {system.price.currency!r}; prices are in {PRICE_CURRENCY}"))
    if system.price.per != PRICE_PER:
        out.append(("price/per", f"price is per {system.price.per!r}; prices are per {PRICE_PER}"))
    return out


def price_matches(system: SystemDescription, usd_per_hour: float) -> bool:
    """True when ``usd_per_hour`` is the system's price (to 1e-9 relative)."""
    p = system.price.usd_per_hour
    return p is not None and math.isclose(p, usd_per_hour, rel_tol=1e-9)
