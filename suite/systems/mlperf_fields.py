"""The MLPerf Training system description: its 33 fields, typed, and pre-checks.

Source: ``mlperf_logging.system_desc_checker`` (mlperf-logging 4.1.68), which requires the
33 fields of :data:`REQUIRED_FIELDS`, and for rulesets >= 4.0 a ``status`` among
:data:`STATUSES`. Its quirks, which :func:`precheck` catches with clear messages:
- it exits 0 even when it reports errors (read its output);
- an invalid ``status`` replaces its list of problems, so the missing-field errors vanish;
- it joins seven fields into a CSV row (:data:`JOINED_FIELDS`), so a number there crashes
  it with a ``TypeError`` traceback instead of a finding.
MLPerf's own system files hold every value as a string (e.g. ``"number_of_nodes": "1"``),
so all 33 are strings here.

This module imports nothing from the rest of the suite: trainbench's system description
(``suite/systems/__init__.py``) holds these fields under its optional ``mlperf`` key.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Status = Literal[
    "Available on-premise",
    "Available cloud",
    "Research, Development, or Internal (RDI)",
    "Preview",
]
STATUSES: tuple[str, ...] = (
    "Available on-premise",
    "Available cloud",
    "Research, Development, or Internal (RDI)",
    "Preview",
)
"""Valid ``status`` values of a training system description (ruleset >= 4.0)."""

SUBMISSION_STATUS: dict[str, str] = {
    "Available on-premise": "onprem",
    "Available cloud": "cloud",
    "Research, Development, or Internal (RDI)": "research",
    "Preview": "preview",
}
"""System ``status`` -> the ``submission_status`` value the compliance checker accepts (training_4.0.0/common.yaml)."""

REQUIRED_FIELDS: tuple[str, ...] = (
    "submitter",
    "division",
    "status",
    "system_name",
    "number_of_nodes",
    "host_processors_per_node",
    "host_processor_model_name",
    "host_processor_core_count",
    "host_processor_vcpu_count",
    "host_processor_frequency",
    "host_processor_caches",
    "host_processor_interconnect",
    "host_memory_capacity",
    "host_storage_type",
    "host_storage_capacity",
    "host_networking",
    "host_networking_topology",
    "host_memory_configuration",
    "accelerators_per_node",
    "accelerator_model_name",
    "accelerator_host_interconnect",
    "accelerator_frequency",
    "accelerator_on-chip_memories",
    "accelerator_memory_configuration",
    "accelerator_memory_capacity",
    "accelerator_interconnect",
    "accelerator_interconnect_topology",
    "cooling",
    "hw_notes",
    "framework",
    "other_software_stack",
    "operating_system",
    "sw_notes",
)
"""The fields the official checker requires, in its order (MLPerf's spelling)."""

JOINED_FIELDS: tuple[str, ...] = (
    "submitter",
    "system_name",
    "host_processor_model_name",
    "host_processor_core_count",
    "accelerator_model_name",
    "accelerators_per_node",
    "framework",
)
"""Fields the official checker joins as strings: anything else there crashes it."""

_MEASURED = "measured by trainbench from the run's recorded environment"
_SUPPLIED = "given by the submitter; empty when not disclosed"
_NA = "'N/A' when not applicable"


class MLPerfSystemFields(BaseModel):
    """The 33 fields of an MLPerf Training system description, all strings (MLPerf's spelling via aliases).

    ``division`` is always ``open``: trainbench's closed division is not MLPerf's (which
    needs convergence to a quality target, reference convergence points and seeds).
    Each field's description says where its value comes from (measured, or given by the
    submitter). An empty string means "not disclosed"; ``N/A`` means "not applicable".
    """

    model_config = ConfigDict(
        extra="forbid", strict=True, serialize_by_alias=True, validate_by_name=True, validate_by_alias=True
    )

    submitter: str = Field(min_length=1, description="the submitting organisation (trainbench's submitter)")
    division: Literal["open"] = Field("open", description="always open: an export is a format bridge, not a claim")
    status: Status = Field(
        description="availability; given by the submitter (default: RDI, or cloud for a rented instance)"
    )
    system_name: str = Field(min_length=1, description="trainbench's system name")
    number_of_nodes: str = Field(description=f"{_MEASURED} (launch.nnodes)")
    host_processors_per_node: str = Field(description=f"sockets; {_SUPPLIED} (not recorded by runs)")
    host_processor_model_name: str = Field(description=f"{_MEASURED} (py-cpuinfo brand)")
    host_processor_core_count: str = Field(
        description=f"{_MEASURED}: physical cores per processor when host_processors_per_node is given, else all "
        "physical cores the OS reports"
    )
    host_processor_vcpu_count: str = Field(description=f"{_MEASURED} (logical CPUs)")
    host_processor_frequency: str = Field(description=f"{_SUPPLIED}, else the maximum clock the OS reports")
    host_processor_caches: str = Field(description=f"{_SUPPLIED}, else L2/L3 as py-cpuinfo reports them")
    host_processor_interconnect: str = Field(description=f"{_SUPPLIED}; {_NA} (one processor)")
    host_memory_capacity: str = Field(description=f"{_MEASURED} (total memory)")
    host_storage_type: str = Field(description=_SUPPLIED)
    host_storage_capacity: str = Field(description=_SUPPLIED)
    host_networking: str = Field(description=_SUPPLIED)
    host_networking_topology: str = Field(description=f"{_SUPPLIED}; {_NA} (one node)")
    host_memory_configuration: str = Field(description=_SUPPLIED)
    accelerators_per_node: str = Field(description=f"{_MEASURED} (NVML GPU count; '0' on CPU)")
    accelerator_model_name: str = Field(description=f"{_MEASURED} (NVML name); {_NA}")
    accelerator_host_interconnect: str = Field(description=f"{_SUPPLIED}; {_NA}")
    accelerator_frequency: str = Field(description=f"{_SUPPLIED}; {_NA}")
    accelerator_on_chip_memories: str = Field(alias="accelerator_on-chip_memories", description=f"{_SUPPLIED}; {_NA}")
    accelerator_memory_configuration: str = Field(description=f"{_SUPPLIED}; {_NA}")
    accelerator_memory_capacity: str = Field(description=f"{_MEASURED} (NVML memory per device); {_NA}")
    accelerator_interconnect: str = Field(description=f"{_SUPPLIED}; {_NA} (fewer than two accelerators)")
    accelerator_interconnect_topology: str = Field(description=f"{_SUPPLIED}; {_NA} (fewer than two accelerators)")
    cooling: str = Field(description=_SUPPLIED)
    hw_notes: str = Field(description="what trainbench measured that has no field, then the submitter's notes")
    framework: str = Field(min_length=1, description=f"{_MEASURED} (PyTorch or TensorFlow version)")
    other_software_stack: str = Field(description=f"{_MEASURED} (libraries, Python, allocator, container image)")
    operating_system: str = Field(description=f"{_MEASURED} (platform string)")
    sw_notes: str = Field(description="the export's provenance and disclaimer, then the submitter's notes")

    def as_mlperf_json(self) -> dict[str, str]:
        """The 33 fields in the checker's order, MLPerf's spelling, ready for ``systems/<system>.json``."""
        doc = self.model_dump(mode="json", by_alias=True)
        return {name: doc[name] for name in REQUIRED_FIELDS}


def precheck(doc: Any) -> list[str]:
    """Every problem the official system-description checker has with ``doc``, all at once.

    Catches what the official tool hides: missing fields behind an invalid ``status``,
    and values that are not strings (a crash in :data:`JOINED_FIELDS`, an oddity
    elsewhere). ``division`` must be ``open`` for a trainbench export. Extra keys are
    allowed, as MLPerf allows them.

    Returns:
        One message per problem, each saying how to fix it; empty when none.
    """
    if not isinstance(doc, dict):
        return [f"a system description must be a JSON object, not {type(doc).__name__}"]
    problems = [
        f"missing field {name!r}: add it (an empty string if not disclosed)"
        for name in REQUIRED_FIELDS
        if name not in doc
    ]
    for name in REQUIRED_FIELDS:
        if name in doc and not isinstance(doc[name], str):
            crash = " (the official checker crashes on it)" if name in JOINED_FIELDS else ""
            problems.append(f"field {name!r} is {type(doc[name]).__name__} {doc[name]!r}; write it as a string{crash}")
    status = doc.get("status")
    if "status" in doc and status not in STATUSES:
        problems.append(
            f"status {status!r} is not one of {', '.join(repr(s) for s in STATUSES)} (the official checker then "
            "reports only this and hides every other problem)"
        )
    if "division" in doc and doc["division"] != "open":
        problems.append(f"division {doc['division']!r}: a trainbench export is always 'open'")
    for name in ("submitter", "system_name", "framework"):
        if isinstance(doc.get(name), str) and not doc[name].strip():
            problems.append(f"field {name!r} is empty; it names the submission and must be given")
    return problems
