"""MLPerf system-description fields generated from what a run recorded about its machine.

What is measured comes from the result's environment (``harness/system.py``'s capture:
CPU model and cores, memory, GPUs, libraries, OS); what no run can see (sockets, storage,
networking, cooling, memory configuration, interconnects, availability) is given by the
submitter as ``--mlperf-field NAME=VALUE`` pairs. Each field's source is written in
:class:`suite.systems.mlperf_fields.MLPerfSystemFields`. Fields left undisclosed are empty
strings and listed, so the CLI can say which ones the submitter may add; ``N/A`` is used
only where a field does not apply (no accelerator, one processor, one node).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from suite.errors import BadInput
from suite.results import Result
from suite.systems import SystemDescription
from suite.systems.mlperf_fields import REQUIRED_FIELDS, STATUSES, MLPerfSystemFields

SUPPLIED_FIELDS: tuple[str, ...] = (
    "status",
    "host_processors_per_node",
    "host_processor_frequency",
    "host_processor_caches",
    "host_processor_interconnect",
    "host_storage_type",
    "host_storage_capacity",
    "host_networking",
    "host_networking_topology",
    "host_memory_configuration",
    "accelerator_host_interconnect",
    "accelerator_frequency",
    "accelerator_on-chip_memories",
    "accelerator_memory_configuration",
    "accelerator_interconnect",
    "accelerator_interconnect_topology",
    "cooling",
    "hw_notes",
    "sw_notes",
)
"""Fields a submitter may give. The others are measured (or fixed) and cannot be set by hand."""

NOT_APPLICABLE = "N/A"
RDI = "Research, Development, or Internal (RDI)"
MAX_FIELD_CHARS = 2000


class SystemFieldError(BadInput):
    """A submitter-given field that is unknown, measured, too long, or invalid; or a contradiction with a run."""

    exit_code = 2


def parse_field_overrides(items: Iterable[str]) -> dict[str, str]:
    """``["cooling=air", ...]`` (the CLI's ``--mlperf-field``) -> ``{"cooling": "air"}``.

    Accepts ``accelerator_on_chip_memories`` for MLPerf's hyphenated name.

    Raises:
        SystemFieldError: not ``NAME=VALUE``, a name that is unknown or measured (the
            message lists the names that may be given), a repeated name, or a value over
            MAX_FIELD_CHARS characters.
    """
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip().replace("accelerator_on_chip_memories", "accelerator_on-chip_memories")
        if not sep:
            raise SystemFieldError(f"--mlperf-field {item!r}: expected NAME=VALUE, e.g. cooling=air")
        if name not in SUPPLIED_FIELDS:
            what = "is measured from the run and cannot be set" if name in REQUIRED_FIELDS else "is not an MLPerf field"
            raise SystemFieldError(f"--mlperf-field {name!r} {what}; fields you may give: {', '.join(SUPPLIED_FIELDS)}")
        if name in out:
            raise SystemFieldError(f"--mlperf-field {name!r} is given twice")
        if len(value) > MAX_FIELD_CHARS:
            raise SystemFieldError(f"--mlperf-field {name!r}: {len(value)} characters, more than {MAX_FIELD_CHARS}")
        out[name] = value
    if "status" in out and out["status"] not in STATUSES:
        raise SystemFieldError(f"status {out['status']!r} must be one of: {'; '.join(STATUSES)}")
    return out


def _get(doc: Any, *keys: str) -> Any:
    for k in keys:
        doc = doc.get(k) if isinstance(doc, dict) else None
    return doc


def _gib(n: Any, digits: int = 1) -> str:
    return f"{n / 2**30:.{digits}f} GiB" if isinstance(n, int) and n > 0 else ""


def _size(n: Any) -> str:
    if not isinstance(n, int) or n <= 0:
        return ""
    return f"{n / 2**20:g} MiB" if n >= 2**20 else f"{n / 2**10:g} KiB"


def _gpus(env: dict[str, Any]) -> list[dict[str, Any]]:
    devices = _get(env, "gpus", "devices")
    return [d for d in devices if isinstance(d, dict)] if isinstance(devices, list) else []


def _framework(env: dict[str, Any]) -> str:
    libs = _get(env, "libraries") or {}
    if _get(env, "torch", "version") or "torch" in libs:
        return f"PyTorch {libs.get('torch') or _get(env, 'torch', 'version')}"
    tf = libs.get("tensorflow") or libs.get("tensorflow-cpu")
    return f"TensorFlow {tf}" if tf else ""


def _software(env: dict[str, Any], result: Result) -> str:
    libs = _get(env, "libraries") or {}
    parts = [f"{k} {v}" for k, v in sorted(libs.items()) if k not in ("torch",)]
    parts.append(f"Python {_get(env, 'python', 'version')}")
    torch_env = _get(env, "torch") or {}
    if torch_env.get("cuda_available"):
        parts.append(f"CUDA {torch_env.get('cuda_version')}, cuDNN {torch_env.get('cudnn_version')}")
    if _get(env, "gpus", "driver"):
        parts.append(f"NVIDIA driver {_get(env, 'gpus', 'driver')}")
    loaded = [k for k, v in (_get(env, "loaded_libraries") or {}).items() if v]
    parts.append(f"loaded allocator/OpenMP libraries: {', '.join(loaded) or 'glibc malloc only'}")
    if result.runtime.kind == "docker":
        parts.append(f"container image {result.runtime.image} ({result.runtime.image_id})")
    return "; ".join(parts)


def mlperf_fields(
    result: Result,
    submitter: str,
    system_name: str,
    supplied: Mapping[str, str] | None = None,
    system: SystemDescription | None = None,
) -> tuple[MLPerfSystemFields, list[str]]:
    """The 33 MLPerf fields for the machine ``result`` ran on.

    Args:
        result: a run on the system; its environment gives the measured fields.
        submitter: the submitting organisation.
        system_name: trainbench's system name.
        supplied: fields the submitter gives (see :func:`parse_field_overrides`).
        system: trainbench's description of the system, when there is one; a rented
            instance (provider and instance type) makes the default status "Available cloud".

    Returns:
        (the fields, names of the fields left undisclosed, i.e. empty).

    Raises:
        SystemFieldError: a supplied field may not be given, or the run lacks a CPU model.
    """
    given = parse_field_overrides(f"{k}={v}" for k, v in (supplied or {}).items())
    env = result.environment
    cpu = _get(env, "cpu") or {}
    if not cpu.get("model"):
        raise SystemFieldError(f"result {result.run_id} recorded no CPU model, so the system cannot be described")
    sockets = given.get("host_processors_per_node", "")
    physical = cpu.get("physical_cores")
    cores = str(physical) if isinstance(physical, int) else ""
    if sockets.isdigit() and int(sockets) > 0 and isinstance(physical, int) and physical % int(sockets) == 0:
        cores = str(physical // int(sockets))
    gpus = _gpus(env)
    names = sorted({str(g.get("name")) for g in gpus})
    mems = sorted({_gib(g.get("memory_bytes"), 0) for g in gpus} - {""})
    nodes = str(result.config.launch.host_count())
    na_acc = NOT_APPLICABLE if not gpus else ""
    na_link = NOT_APPLICABLE if len(gpus) < 2 else ""
    rented = system is not None and system.instance.provider and system.instance.instance_type
    mhz = cpu.get("max_mhz")
    caches = ", ".join(
        f"{level}: {_size(cpu.get(key))}"
        for level, key in (("L2", "l2_cache_bytes"), ("L3", "l3_cache_bytes"))
        if cpu.get(key)
    )
    numa = _get(env, "numa_nodes")
    flags = cpu.get("flags") or []
    isa = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f in flags]
    notes = [
        f"measured by trainbench {result.provenance.suite_version} in run {result.run_id}",
        f"{len(numa) if isinstance(numa, list) and numa else 1} NUMA node(s)",
        f"ISA: {', '.join(isa) or 'none of avx2/avx512f/avx512_bf16/amx_bf16'}",
        "host_processor_core_count: "
        + ("per processor" if cores != str(physical) else "all physical cores the OS reports"),
    ]
    if (caches or mhz) and "hypervisor" in flags:
        notes.append("caches and frequency as a virtual machine reports them to py-cpuinfo/psutil")
    hw_notes = "; ".join(notes)
    sw_notes = (
        f"exported by trainbench {result.provenance.suite_version} as a format bridge so MLPerf tools can read "
        "trainbench runs; open division; not an MLPerf result"
    )
    values: dict[str, str] = {
        "submitter": submitter,
        "division": "open",
        "status": given.get("status") or ("Available cloud" if rented else RDI),
        "system_name": system_name,
        "number_of_nodes": nodes,
        "host_processors_per_node": sockets,
        "host_processor_model_name": str(cpu["model"]),
        "host_processor_core_count": cores,
        "host_processor_vcpu_count": str(cpu.get("logical_cores") or ""),
        "host_processor_frequency": given.get("host_processor_frequency")
        or (f"{mhz:.0f} MHz (maximum)" if isinstance(mhz, int | float) and mhz > 0 else ""),
        "host_processor_caches": given.get("host_processor_caches") or caches,
        "host_processor_interconnect": given.get("host_processor_interconnect")
        or (NOT_APPLICABLE if sockets == "1" else ""),
        "host_memory_capacity": _gib(_get(env, "memory", "total_bytes")),
        "host_networking_topology": given.get("host_networking_topology") or (NOT_APPLICABLE if nodes == "1" else ""),
        "accelerators_per_node": str(len(gpus)),
        "accelerator_model_name": " + ".join(names) or NOT_APPLICABLE,
        "accelerator_memory_capacity": ", ".join(mems) or na_acc or "",
        "accelerator_interconnect": given.get("accelerator_interconnect") or na_link,
        "accelerator_interconnect_topology": given.get("accelerator_interconnect_topology") or na_link,
        "hw_notes": "; ".join(p for p in (hw_notes, given.get("hw_notes", "")) if p),
        "framework": _framework(env),
        "other_software_stack": _software(env, result),
        "operating_system": str(_get(env, "host", "os") or ""),
        "sw_notes": "; ".join(p for p in (sw_notes, given.get("sw_notes", "")) if p),
    }
    for name in (
        "accelerator_host_interconnect",
        "accelerator_frequency",
        "accelerator_on-chip_memories",
        "accelerator_memory_configuration",
    ):
        values[name] = given.get(name) or na_acc
    for name in (
        "host_storage_type",
        "host_storage_capacity",
        "host_networking",
        "host_memory_configuration",
        "cooling",
    ):
        values[name] = given.get(name, "")
    try:
        fields = MLPerfSystemFields.model_validate(values)
    except ValidationError as exc:
        raise SystemFieldError(f"the MLPerf system description is invalid: {exc}") from exc
    doc = fields.as_mlperf_json()
    return fields, [name for name in REQUIRED_FIELDS if doc[name] == ""]


def with_mlperf(
    system: SystemDescription, result: Result, supplied: Mapping[str, str] | None = None
) -> tuple[SystemDescription, list[str]]:
    """``system`` with its ``mlperf`` fields filled in from ``result`` and ``supplied``.

    This is what ``trainbench submit --describe-system --mlperf-field ...`` writes.

    Returns:
        (the description, names of the MLPerf fields left undisclosed).

    Raises:
        SystemFieldError: see :func:`mlperf_fields`.
    """
    fields, undisclosed = mlperf_fields(result, system.submitter, system.name, supplied, system)
    return system.model_copy(update={"mlperf": fields}), undisclosed


def contradictions(fields: MLPerfSystemFields, result: Result) -> list[str]:
    """Where the measured MLPerf fields disagree with what ``result`` recorded (one message each)."""
    env = result.environment
    measured = {
        "host_processor_model_name": str(_get(env, "cpu", "model")),
        "host_processor_vcpu_count": str(_get(env, "cpu", "logical_cores")),
        "accelerators_per_node": str(len(_gpus(env))),
        "framework": _framework(env),
    }
    doc = fields.as_mlperf_json()
    return [
        f"{name}: the system description says {doc[name]!r}, run {result.run_id} recorded {value!r}"
        for name, value in measured.items()
        if doc[name] != value
    ]
