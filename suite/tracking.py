"""MLflow logging: the only module that imports MLflow.

One experiment per workload; one MLflow run per trainbench run, with the config as
params, the summary as metrics, per-step throughput with step indices, tags, and
the result JSON, environment and timeline plot as artifacts.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from pathlib import Path
from urllib.parse import unquote, urlparse

from mlflow.entities import Metric, Param, RunTag
from mlflow.tracking import MlflowClient

from harness.records import Phase
from suite.results import Result

DEFAULT_DB = "mlflow.db"
PARAM_MAX = 6000  # MLflow's limit on a param value's length
BATCH_METRICS = 1000  # MLflow's limit on metrics per log_batch call


class TrackingError(RuntimeError):
    """MLflow could not record the run (the result file is kept regardless)."""


def default_tracking_uri(cwd: Path | None = None) -> str:
    """``MLFLOW_TRACKING_URI`` if set, else embedded SQLite ``mlflow.db`` in ``cwd``."""
    env = os.environ.get("MLFLOW_TRACKING_URI")
    if env:
        return env
    return f"sqlite:///{((cwd or Path.cwd()) / DEFAULT_DB).resolve()}"


def _artifact_root(tracking_uri: str) -> str | None:
    """For a SQLite store, keep artifacts beside the database (``mlartifacts/``)."""
    parsed = urlparse(tracking_uri)
    if parsed.scheme != "sqlite":
        return None
    db = Path(unquote(tracking_uri[len("sqlite:///") :]))
    return (db.parent / "mlartifacts").resolve().as_uri()


def experiment_id(client: MlflowClient, name: str, tracking_uri: str) -> str:
    """Id of experiment ``name``, creating it (artifacts beside a SQLite store) if needed."""
    exp = client.get_experiment_by_name(name)
    if exp is not None:
        return str(exp.experiment_id)
    root = _artifact_root(tracking_uri)
    return str(client.create_experiment(name, artifact_location=f"{root}/{name}" if root else None))


def _metrics(result: Result, now_ms: int) -> list[Metric]:
    out: list[Metric] = []
    s = result.summary
    if s is not None:
        values: dict[str, float | None] = {
            "throughput_samples_per_s": s.throughput,
            "step_time_median_s": s.step_time_median_s,
            "step_time_p90_s": s.step_time_p90_s,
            "step_time_iqr_s": s.step_time_iqr_s,
            "step_time_cv": s.step_time_cv,
            "throughput_ci95_low": s.throughput_ci95.low if s.throughput_ci95 else None,
            "throughput_ci95_high": s.throughput_ci95.high if s.throughput_ci95 else None,
            "repeat_spread": s.repeat_spread,
            "repeat_cv": s.repeat_cv,
            "input_bound_fraction": s.input_bound_fraction,
            "warmup_seconds": s.warmup_seconds,
            "first_step_s": s.first_step_s,
            "measured_samples": float(s.measured_samples),
            "measured_seconds": s.measured_seconds,
        }
        for i, t in enumerate(s.repeat_throughputs):
            out.append(Metric("repeat_throughput_samples_per_s", t, now_ms, i))
        if result.utilization_summary is not None:
            values["cpu_mean_percent"] = result.utilization_summary.cpu_mean_percent
            peak = result.utilization_summary.rss_peak_bytes
            values["rss_peak_bytes"] = float(peak) if peak is not None else None
        if result.cost is not None:
            values["samples_per_dollar"] = result.cost.samples_per_dollar
            values["usd_per_hour"] = result.cost.usd_per_hour
        out += [Metric(k, float(v), now_ms, 0) for k, v in values.items() if v is not None]
    measured = [r for r in result.steps if r.phase is Phase.MEASUREMENT]
    for i, r in enumerate(measured):
        out.append(Metric("step_throughput_samples_per_s", r.samples / r.step_s if r.step_s > 0 else 0.0, now_ms, i))
        out.append(Metric("step_time_s", r.step_s, now_ms, i))
        out.append(Metric("step_data_wait_s", r.data_wait_s, now_ms, i))
    return out


def _tags(result: Result) -> dict[str, str]:
    env = result.environment
    tags = {
        "trainbench.workload": result.workload,
        "trainbench.profile": result.profile,
        "trainbench.division": result.division,
        "trainbench.system": result.system,
        "trainbench.status": result.status,
        "trainbench.runtime": result.runtime.kind,
        "trainbench.launcher": result.runtime.launcher,
        "trainbench.cpu_model": str(env.get("cpu", {}).get("model")),
        "trainbench.result_id": result.run_id,
        "trainbench.digest": result.digest,
        "trainbench.suite_version": result.provenance.suite_version,
    }
    if result.provenance.git_commit:
        tags["trainbench.git_commit"] = result.provenance.git_commit
        tags["mlflow.source.git.commit"] = result.provenance.git_commit
    if result.diagnosis is not None:
        tags["trainbench.verdict"] = result.diagnosis.verdict
        tags["mlflow.note.content"] = result.diagnosis.message
    if result.runtime.image:
        tags["trainbench.image"] = result.runtime.image
    if result.error:
        tags["trainbench.error"] = result.error[:PARAM_MAX]
    return tags


def log_result(
    result: Result,
    result_path: Path,
    extra_artifacts: list[Path],
    tracking_uri: str,
    parent_run_id: str | None = None,
) -> str:
    """Record ``result`` as one MLflow run and return the MLflow run id.

    With ``parent_run_id`` the run is a child of that run (MLflow's
    ``mlflow.parentRunId`` tag), as for the points of a sweep.

    The run ends FINISHED for a complete result, KILLED for an interrupted one and
    FAILED for any other incomplete one.

    Raises:
        TrackingError: the store could not be reached or refused the run.
    """
    try:
        client = MlflowClient(tracking_uri=tracking_uri)
        exp = experiment_id(client, result.workload, tracking_uri)
        tags = _tags(result)
        if parent_run_id:
            tags["mlflow.parentRunId"] = parent_run_id
        run = client.create_run(exp, run_name=f"{result.workload}-{result.profile}-{result.run_id[:8]}", tags=tags)
    except Exception as exc:
        raise TrackingError(f"MLflow at {tracking_uri} could not start a run: {exc}") from exc
    rid = run.info.run_id
    try:
        params = [Param(k, v[:PARAM_MAX]) for k, v in result.config.flat_params().items()]
        params += [Param("division", result.division), Param("system", result.system)]
        for i in range(0, len(params), 100):
            client.log_batch(rid, params=params[i : i + 100])
        metrics = _metrics(result, int(time.time() * 1000))
        for i in range(0, len(metrics), BATCH_METRICS):
            client.log_batch(rid, metrics=metrics[i : i + BATCH_METRICS])
        client.log_batch(rid, tags=[RunTag("trainbench.result_file", str(result_path))])
        client.log_artifact(rid, str(result_path))
        with tempfile.TemporaryDirectory() as tmp:
            env_path = Path(tmp) / "environment.json"
            env_path.write_text(json.dumps(result.environment, indent=1))
            client.log_artifact(rid, str(env_path))
        for p in extra_artifacts:
            client.log_artifact(rid, str(p))
        if result.status == "complete":
            status = "FINISHED"
        else:
            status = "KILLED" if result.error and result.error.startswith("interrupted") else "FAILED"
        client.set_terminated(rid, status)
    except Exception as exc:
        with contextlib.suppress(Exception):  # the store may be gone; the TrackingError below says so
            client.set_terminated(rid, "FAILED")
        raise TrackingError(f"MLflow at {tracking_uri} failed while logging run {rid}: {exc}") from exc
    return str(rid)
