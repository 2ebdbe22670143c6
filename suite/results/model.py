"""The result model: what one run produced, its canonical digest and its JSON Schema.

A result holds the resolved config, the environment the rank read back, the raw
step and window records, the derived summary, the cost and provenance. Its
``digest`` is sha256 over the canonical JSON of everything else (keys sorted, no
spaces, UTF-8), so any edited number is caught (:func:`suite.results.verify_digest`).
Reading and writing files is :mod:`suite.results.io`; older schema versions are
upgraded by :mod:`suite.results.migrations`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.records import StepRecord, WindowRecord
from harness.sampler import UtilizationSample, UtilizationSummary
from harness.stats import Summary
from suite.config import RunConfig

SCHEMA_VERSION = 2
"""The result schema this trainbench writes (2: launch settings are the variant of the run's launcher)."""
MAX_STEPS = 100_000
"""Most step records in one result (all ranks): 16 MiB of result file holds about 80,000 (schema ``maxItems``)."""
MAX_WINDOWS = 20_000
"""Most window records in one result (two per repeat per rank) (schema ``maxItems``)."""
MAX_READINGS = 100_000
"""Most utilization readings in one result (an hour at 0.05 s) (schema ``maxItems``)."""
MAX_STEPS_PER_WINDOW = MAX_STEPS
"""Most steps one window may claim (schema ``maximum`` of a window's ``steps``)."""
SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas"
SCHEMA_PATH = SCHEMA_DIR / f"result-v{SCHEMA_VERSION}.schema.json"
"""The committed JSON Schema of :data:`SCHEMA_VERSION` (``trainbench schema --write`` regenerates it)."""


class SlurmJob(BaseModel):
    """The Slurm job a run ran as (``trainbench run --runtime slurm``), as the controller reported it at its end."""

    model_config = ConfigDict(extra="forbid")

    job_id: str
    cluster: str | None = None
    nodelist: str | None = Field(None, description="Slurm's compact node list, e.g. n[1-2]")
    nodes: list[str] = Field(description="the job's nodes, expanded, in Slurm's order")
    num_nodes: int = Field(ge=0)
    ntasks_per_node: int = Field(ge=1, description="ranks per node")
    partition: str | None = None
    batch_host: str | None = None
    state: str = Field(description="the job's final state, e.g. COMPLETED, NODE_FAIL, CANCELLED")
    exit_code: str | None = Field(None, description="exit:signal")
    container_image: str | None = Field(None, description="the Pyxis image every rank ran in, if any")
    script: str = Field(description="path of the batch script (job.sbatch in the run directory)")


class Runtime(BaseModel):
    """Where and how the ranks ran."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["local", "docker", "slurm"] = "local"
    launcher: str
    command: list[str]
    env_set: dict[str, str]
    image: str | None = None
    image_id: str | None = None
    slurm: SlurmJob | None = None


class NodeRecord(BaseModel):
    """One node (host) of a multi-node run: its system description and its own utilization readings."""

    model_config = ConfigDict(extra="forbid")

    hostname: str
    ranks: list[int] = Field(description="the global ranks that ran on this node")
    system: dict[str, Any] = Field(description="the node's system description (its lowest rank's)")
    utilization: list[UtilizationSample] = Field(description="the sampler's readings of its lowest rank")


class Nodes(BaseModel):
    """The nodes of a multi-node run, one system description each, and whether they differ."""

    model_config = ConfigDict(extra="forbid")

    nodes: list[NodeRecord]
    heterogeneous: bool = Field(description="the nodes differ in hardware or software that changes throughput")
    differences: dict[str, dict[str, Any]] = Field(description="field -> {hostname: value}, for differing fields")


class Provenance(BaseModel):
    """Who produced the result, from which code."""

    model_config = ConfigDict(extra="forbid")

    suite_version: str
    git_commit: str | None
    git_dirty: bool | None
    created_at: str = Field(description="UTC, ISO 8601")


class Diagnosis(BaseModel):
    """Plain-language verdict on which limit holds: the input pipeline, the CPU, the GPU or the host's launches."""

    model_config = ConfigDict(extra="forbid")

    verdict: Literal["input-bound", "partly input-bound", "compute-bound", "gpu-bound", "host-bound"]
    message: str
    cpu_mean_percent: float | None
    disturbed: bool | None = Field(
        None, description="a measurement window was disturbed by other processes or steal (None: not judged)"
    )
    gpu_util_percent: float | None = Field(
        None, description="NVML's GPU utilization over the measurement windows, 0-100 (None: no GPU readings)"
    )
    device_busy_fraction: float | None = Field(
        None, description="share of the wall clock the device spent inside steps (None: no device step times)"
    )


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
    efficiency_ci95_reason: str | None = Field(
        None, description="why the efficiency's interval is unbounded, and the fix (None when bounded)"
    )
    disturbed: bool | None = Field(
        None,
        description="the comparison is disturbed: an efficiency above 1 beyond its interval on the same CPUs and "
        "global batch, or a disturbed measurement window in either run (None in older results)",
    )
    disturbed_reason: str | None = Field(None, description="why the comparison counts as disturbed, with the fix")
    nodes: int | None = Field(
        None,
        description="set when the baseline is one node of a multi-node (Slurm) run at the same per-rank batch: "
        "efficiency = ddp_throughput / (nodes x single_throughput)",
    )


class Reproduction(BaseModel):
    """This run re-measured another result's claim (``trainbench reproduce``), and the verdict."""

    model_config = ConfigDict(extra="forbid")

    claim_run_id: str
    claim_digest: str
    claim_path: str
    claimed: float = Field(gt=0, description="the claim's throughput, samples/s")
    measured: float = Field(gt=0, description="this run's throughput, samples/s")
    measured_ci95: list[float] | None = Field(None, description="this run's 95% CI [low, high], samples/s")
    ratio: float = Field(gt=0, description="claimed / measured")
    ratio_ci95: list[float] | None = Field(None, description="95% CI of the ratio [low, high]")
    tolerance: float = Field(
        ge=0,
        description="run-to-run variation allowed: the claim is reproduced when the "
        "ratio's interval meets [1/(1+t), 1+t]",
    )
    verdict: Literal["reproduced", "not reproduced", "undetermined"] = Field(
        description="undetermined: the re-measurement bounds no interval, or the interval lies outside the band "
        "but the slower run was disturbed"
    )
    method: str
    differences: list[str] = Field(default_factory=list, description="how this machine differs from the claim's")
    anyway: bool = Field(False, description="ran although the hardware class differs (--anyway)")


class Result(BaseModel):
    """One run of one workload.

    ``status`` is ``complete`` only when every window finished; an interrupted or
    failed run keeps its raw records with status ``incomplete`` and no summary.

    A multi-node run (a Slurm job) also records its job (``runtime.slurm``) and each
    node's system description and utilization readings (``nodes``); ``environment`` and
    ``utilization`` are then global rank 0's.

    ``digest`` identifies the file as it was written: a result read from an older schema
    version and upgraded (:mod:`suite.results.migrations`) keeps its stored digest, which
    bands and duplicate checks cite, so it is not re-sealed.
    """

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[2] = 2
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
    steps: list[StepRecord] = Field(max_length=MAX_STEPS)
    windows: list[WindowRecord] = Field(max_length=MAX_WINDOWS)
    utilization: list[UtilizationSample] = Field(max_length=MAX_READINGS)
    utilization_summary: UtilizationSummary | None
    summary: Summary | None
    diagnosis: Diagnosis | None
    cost: CostRecord | None
    scaling: Scaling | None = None
    run_uid: str | None = Field(
        None, description="the run's identity as the harness of every rank held it (the supervisor mints it)"
    )
    origin_unix_s: float | None = Field(
        None,
        description="wall-clock seconds since the epoch at global rank 0's run origin: its records' start_s are "
        "relative to this instant (None in results written before schema v2)",
    )
    started_at: str | None = Field(None, description="origin_unix_s as UTC ISO 8601")
    plan: dict[str, Any] | None = Field(
        None, description="the windows plan global rank 0's harness actually applied (budget calibration included)"
    )
    bf16_emulated: bool | None = Field(
        None,
        description="bf16 ran without native bf16 matrix instructions on some rank (an explicit precision=bf16 on "
        "such a CPU): the result measures the emulation; None when the run did not use bf16 on the CPU",
    )
    nodes: Nodes | None = None
    reproduction: Reproduction | None = Field(None, description="set when this run re-measured another result")
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
    schema["$defs"]["WindowRecord"]["properties"]["steps"]["maximum"] = MAX_STEPS_PER_WINDOW
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://trainbench.dev/schemas/result-v{SCHEMA_VERSION}.schema.json"
    return schema


def verify_digest(doc: dict[str, Any]) -> bool:
    """True when ``doc['digest']`` matches its content (in the canonical form, which every
    schema version shares)."""
    return bool(doc.get("digest")) and doc["digest"] == compute_digest(doc)
