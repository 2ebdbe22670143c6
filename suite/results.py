"""The versioned result file: model, canonical digest, JSON Schema, read and write.

A result holds the resolved config, the environment the rank read back, the raw
step and window records, the derived summary, the cost and provenance. Its
``digest`` is sha256 over the canonical JSON of everything else (keys sorted, no
spaces, UTF-8), so any edited number is caught by :func:`verify_digest`.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any, Literal

import jsonschema
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.records import StepRecord, WindowRecord
from harness.sampler import UtilizationSample, UtilizationSummary
from harness.stats import MeasurementError, Summary, summarize
from suite.specs import RunConfig

SCHEMA_VERSION = 1
SCHEMA_PATH = Path(__file__).resolve().parent / "schemas" / f"result-v{SCHEMA_VERSION}.schema.json"
MAX_RESULT_BYTES = 64 * 1024 * 1024
"""Largest result file :func:`read_result` accepts (a 1,000-step run is about 1 MB)."""


class ResultError(ValueError):
    """A result file that cannot be read, fails its schema or its digest."""


class Runtime(BaseModel):
    """Where and how the ranks ran."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["local", "docker"] = "local"
    launcher: str
    command: list[str]
    env_set: dict[str, str]
    image: str | None = None
    image_id: str | None = None


class Provenance(BaseModel):
    """Who produced the result, from which code."""

    model_config = ConfigDict(extra="forbid")

    suite_version: str
    git_commit: str | None
    git_dirty: bool | None
    created_at: str = Field(description="UTC, ISO 8601")


class Diagnosis(BaseModel):
    """Plain-language verdict on the input pipeline and CPU use."""

    model_config = ConfigDict(extra="forbid")

    verdict: Literal["input-bound", "partly input-bound", "compute-bound"]
    message: str
    cpu_mean_percent: float | None


class CostRecord(BaseModel):
    """Price and samples per dollar (samples/s x 3600 / USD per hour)."""

    model_config = ConfigDict(extra="forbid")

    usd_per_hour: float = Field(gt=0)
    samples_per_dollar: float = Field(ge=0)
    instance_type: str | None
    pricing: str | None
    region: str | None
    price_source: str
    price_date: str | None


class Scaling(BaseModel):
    """A data-parallel run against one process on the same CPUs with the same global batch."""

    model_config = ConfigDict(extra="forbid")

    ddp_throughput: float = Field(gt=0, description="samples/s, all ranks")
    single_throughput: float = Field(gt=0, description="samples/s, one process")
    single_ci95_low: float | None
    single_ci95_high: float | None
    efficiency: float = Field(gt=0, description="ddp_throughput / single_throughput")
    efficiency_ci95_low: float | None
    efficiency_ci95_high: float | None
    method: str
    single_result: str = Field(description="path of the single-process result file")
    single_digest: str


class Result(BaseModel):
    """One run of one workload.

    ``status`` is ``complete`` only when every window finished; an interrupted or
    failed run keeps its raw records with status ``incomplete`` and no summary.
    """

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    kind: Literal["trainbench.result"] = "trainbench.result"
    run_id: str
    status: Literal["complete", "incomplete"]
    error: str | None = None
    workload: str
    profile: str
    division: Literal["closed", "open"]
    system: str
    config: RunConfig
    runtime: Runtime
    world_size: int = Field(ge=1)
    environment: dict[str, Any]
    workload_info: dict[str, Any]
    steps: list[StepRecord]
    windows: list[WindowRecord]
    utilization: list[UtilizationSample]
    utilization_summary: UtilizationSummary | None
    summary: Summary | None
    diagnosis: Diagnosis | None
    cost: CostRecord | None
    scaling: Scaling | None = None
    provenance: Provenance
    digest: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")


def canonical_bytes(doc: dict[str, Any]) -> bytes:
    """Canonical JSON of ``doc`` without its ``digest`` key (sorted keys, compact, UTF-8)."""
    body = {k: v for k, v in doc.items() if k != "digest"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def compute_digest(doc: dict[str, Any]) -> str:
    """``sha256:<hex>`` over :func:`canonical_bytes`."""
    return "sha256:" + hashlib.sha256(canonical_bytes(doc)).hexdigest()


def seal(fields: dict[str, Any]) -> Result:
    """Build a :class:`Result` from its fields and set its digest.

    Raises:
        pydantic.ValidationError: a field does not fit the model.
    """
    draft = Result.model_validate({**fields, "digest": "sha256:" + "0" * 64})
    doc = draft.model_dump(mode="json")
    return draft.model_copy(update={"digest": compute_digest(doc)})


def json_schema() -> dict[str, Any]:
    """JSON Schema of the result file (generated from the model; committed as SCHEMA_PATH)."""
    schema = Result.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://trainbench.dev/schemas/result-v{SCHEMA_VERSION}.schema.json"
    return schema


def write_result(result: Result, path: Path) -> Path:
    """Write atomically (temp file + rename) as indented JSON; returns ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(result.model_dump(mode="json"), indent=1, allow_nan=False) + "\n")
    os.replace(tmp, path)
    return path


def verify_digest(doc: dict[str, Any]) -> bool:
    """True when ``doc['digest']`` matches its content."""
    return bool(doc.get("digest")) and doc["digest"] == compute_digest(doc)


def _reject_constant(name: str) -> float:
    raise ValueError(f"non-finite number {name} is not allowed in a result")


def check_summary(result: Result) -> None:
    """Recompute the summary from the raw records and compare it with the stored one.

    The digest proves a file was not edited after sealing, but anyone can reseal a
    forged file; re-deriving the statistics from the raw step and window records
    catches a summary that the records do not support.

    Raises:
        ResultError: a complete result without a summary, an incomplete one with a
            score, or stored statistics that differ from the recomputed ones.
    """
    if result.status != "complete":
        if result.summary is not None or result.cost is not None:
            raise ResultError("an incomplete result must not carry a summary or cost")
        return
    if result.summary is None:
        raise ResultError("a complete result has no summary")
    try:
        fresh = summarize(result.steps, result.windows)
    except MeasurementError as exc:
        raise ResultError(f"the raw records give no valid measurement: {exc}") from exc
    stored = result.summary
    for name in ("throughput", "measured_seconds", "step_time_median_s", "input_bound_fraction"):
        a, b = getattr(stored, name), getattr(fresh, name)
        if not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12):
            raise ResultError(f"summary.{name} is {a} but the raw records give {b}")
    if stored.measured_samples != fresh.measured_samples:
        raise ResultError(
            f"summary.measured_samples is {stored.measured_samples} but the raw records give {fresh.measured_samples}"
        )


def read_result(path: Path, check_digest: bool = True) -> Result:
    """Read, schema-check and digest-check a result file.

    Raises:
        ResultError: too large, not JSON (NaN and Infinity included), an unsupported
            schema version (the message says which versions this trainbench reads), a
            schema violation, a digest mismatch (the content was edited after the run),
            or a summary that the raw records do not support (:func:`check_summary`).
    """
    try:
        size = path.stat().st_size
        if size > MAX_RESULT_BYTES:
            raise ResultError(f"{path}: {size} bytes is over the {MAX_RESULT_BYTES}-byte limit for a result")
        doc = json.loads(path.read_text(), parse_constant=_reject_constant)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ResultError(f"{path}: cannot read result: {exc}") from exc
    if not isinstance(doc, dict):
        raise ResultError(f"{path}: a result must be a JSON object")
    version = doc.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ResultError(
            f"{path}: result schema_version {version!r} is not supported; this trainbench reads version "
            f"{SCHEMA_VERSION}. Re-run with this suite version, or use the trainbench that wrote it"
        )
    schema = json.loads(SCHEMA_PATH.read_text())
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc), key=lambda e: list(e.path))
    if errors:
        where = "/".join(str(p) for p in errors[0].absolute_path) or "(top)"
        raise ResultError(f"{path}: {len(errors)} schema error(s); first at {where}: {errors[0].message}")
    if check_digest and not verify_digest(doc):
        raise ResultError(f"{path}: digest mismatch: the file was changed after the run wrote it")
    try:
        result = Result.model_validate(doc)
    except (ValidationError, ValueError, TypeError) as exc:
        raise ResultError(f"{path}: {exc}") from exc
    try:
        check_summary(result)
    except ResultError as exc:
        raise ResultError(f"{path}: {exc}") from exc
    return result
