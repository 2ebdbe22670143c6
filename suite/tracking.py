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
from contextlib import AbstractContextManager
from pathlib import Path
from urllib.parse import unquote, urlparse

from filelock import FileLock
from mlflow.entities import Metric, Param, RunTag
from mlflow.tracking import MlflowClient

from harness.records import Phase
from suite.errors import TrackingError as TrackingError  # defined there so catching it needs no MLflow
from suite.results import Result

DEFAULT_DB = "mlflow.db"
LOGGED_TAG = "trainbench.logged"
"""Set to "complete" as the last step of logging a run; runs without it broke off midway."""
LOCK_TIMEOUT_S = 300.0
"""Seconds a run waits for another process's write to a SQLite store."""

# An unreachable tracking server must not hold a finished run hostage for minutes:
# fewer retries and a shorter timeout than MLflow's defaults (7 retries, 120 s),
# unless the user set their own. A failed upload goes to the outbox (trainbench sync).
os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "20")
PARAM_MAX = 6000  # MLflow's limit on a param value's length
BATCH_METRICS = 1000  # MLflow's limit on metrics per log_batch call


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
        if result.scaling is not None:  # issue 6: data-parallel vs one process on the same CPUs
            sc = result.scaling
            values["scaling_efficiency"] = sc.efficiency
            values["scaling_efficiency_ci95_low"] = sc.efficiency_ci95_low
            values["scaling_efficiency_ci95_high"] = sc.efficiency_ci95_high
            values["single_process_throughput_samples_per_s"] = sc.single_throughput
        prep = result.workload_info.get("preprocessing") or {}  # issue 5: the input pipeline's cost and placement
        for key in ("cpu_ms_per_sample", "workers", "cores"):
            if isinstance(prep.get(key), int | float):
                values[f"preprocess_{key}"] = float(prep[key])
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
    prep = result.workload_info.get("preprocessing") or {}
    if prep.get("location"):
        tags["trainbench.preprocessing"] = f"{prep.get('engine', '')}: {prep['location']}"[:PARAM_MAX]
    if result.error:
        tags["trainbench.error"] = result.error[:PARAM_MAX]
    return tags


def _store_lock(tracking_uri: str) -> AbstractContextManager[object]:
    """An inter-process lock around writes to a SQLite store (two runs logging at once).

    SQLite allows one writer; MLflow's first use of a new database also runs schema
    migrations, which must not interleave. Other stores serialize on the server.
    """
    if urlparse(tracking_uri).scheme != "sqlite":
        return contextlib.nullcontext()
    db = Path(unquote(tracking_uri[len("sqlite:///") :]))
    db.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(str(db) + ".trainbench.lock", timeout=LOCK_TIMEOUT_S)


def _existing(client: MlflowClient, exp: str, result_id: str) -> tuple[str | None, list[str]]:
    """(run id that fully logged ``result_id``, ids of runs that broke off while logging it)."""
    runs = client.search_runs([exp], filter_string=f"tags.`trainbench.result_id` = '{result_id}'")
    done = [r.info.run_id for r in runs if r.data.tags.get(LOGGED_TAG) == "complete"]
    partial = [r.info.run_id for r in runs if r.data.tags.get(LOGGED_TAG) != "complete"]
    return (done[0] if done else None), partial


def log_result(
    result: Result,
    result_path: Path,
    extra_artifacts: list[Path],
    tracking_uri: str,
    parent_run_id: str | None = None,
) -> str:
    """Record ``result`` as one MLflow run and return the MLflow run id.

    Idempotent: a result (``trainbench.result_id`` tag) that is already fully logged
    is not logged again, and a run that broke off while logging it is deleted and
    replaced, so a retry (``trainbench sync``) never creates duplicates.

    With ``parent_run_id`` the run is a child of that run (MLflow's
    ``mlflow.parentRunId`` tag), as for the points of a sweep.

    The run ends FINISHED for a complete result, KILLED for an interrupted one and
    FAILED for any other incomplete one.

    Raises:
        TrackingError: the store could not be reached or refused the run.
    """
    with _store_lock(tracking_uri):
        try:
            client = MlflowClient(tracking_uri=tracking_uri)
            exp = experiment_id(client, result.workload, tracking_uri)
            done, partial = _existing(client, exp, result.run_id)
            if done is not None:
                return done
            for stale in partial:
                client.delete_run(stale)
            tags = _tags(result)
            if parent_run_id:
                tags["mlflow.parentRunId"] = parent_run_id
            run_name = f"{result.workload}-{result.profile}-{result.run_id[:8]}"
            run = client.create_run(exp, run_name=run_name, tags=tags)
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
            client.set_tag(rid, LOGGED_TAG, "complete")
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


REPORT_EXPERIMENT = "trainbench-report"
"""MLflow experiment that holds the runs of ``trainbench report``."""


def log_report(
    artifacts: list[Path],
    metrics: dict[str, float],
    params: dict[str, str],
    tracking_uri: str,
    experiment: str = REPORT_EXPERIMENT,
) -> str:
    """Record one ``trainbench report`` as an MLflow run and return its run id.

    Args:
        artifacts: files to attach (the Markdown and JSON reports, the PNG chart).
        metrics: metric name -> value (samples/s and samples per dollar per system).
        params: what the report was made from (submissions path, bands file).
        tracking_uri: the MLflow store.
        experiment: experiment name (created beside a SQLite store if missing).

    Raises:
        TrackingError: the store could not be reached or refused the run.
    """
    try:
        client = MlflowClient(tracking_uri=tracking_uri)
        exp = experiment_id(client, experiment, tracking_uri)
        run = client.create_run(exp, run_name="trainbench-report", tags={"trainbench.kind": "report"})
    except Exception as exc:
        raise TrackingError(f"MLflow at {tracking_uri} could not start a report run: {exc}") from exc
    rid = run.info.run_id
    try:
        now = int(time.time() * 1000)
        client.log_batch(rid, params=[Param(k, v[:PARAM_MAX]) for k, v in params.items()])
        items = [Metric(k, float(v), now, 0) for k, v in metrics.items()]
        for i in range(0, len(items), BATCH_METRICS):
            client.log_batch(rid, metrics=items[i : i + BATCH_METRICS])
        for p in artifacts:
            client.log_artifact(rid, str(p))
        client.set_terminated(rid, "FINISHED")
    except Exception as exc:
        with contextlib.suppress(Exception):  # the store may be gone; the TrackingError below says so
            client.set_terminated(rid, "FAILED")
        raise TrackingError(f"MLflow at {tracking_uri} failed while logging report run {rid}: {exc}") from exc
    return str(rid)


def start_parent_run(experiment: str, run_name: str, params: dict[str, str], tracking_uri: str) -> str:
    """Create the RUNNING parent run of a sweep and return its id (issue 5).

    Its points are logged with ``log_result(..., parent_run_id=...)``; close it with
    :func:`finish_parent_run`.

    Args:
        experiment: experiment name (the workload's, so parent and children sit together).
        run_name: display name, e.g. ``mnist-dataheavy-sweep-num_workers``.
        params: the sweep's definition (swept key, values, profile, other overrides).
        tracking_uri: the MLflow store.

    Raises:
        TrackingError: the store could not be reached or refused the run.
    """
    with _store_lock(tracking_uri):
        try:
            client = MlflowClient(tracking_uri=tracking_uri)
            exp = experiment_id(client, experiment, tracking_uri)
            run = client.create_run(exp, run_name=run_name, tags={"trainbench.kind": "sweep"})
            rid = str(run.info.run_id)
            client.log_batch(rid, params=[Param(k, v[:PARAM_MAX]) for k, v in params.items()])
        except Exception as exc:
            raise TrackingError(f"MLflow at {tracking_uri} could not start the sweep's parent run: {exc}") from exc
    return rid


def finish_parent_run(
    run_id: str, metrics: list[tuple[str, float, int]], artifacts: list[Path], status: str, tracking_uri: str
) -> None:
    """Attach a sweep's per-point metrics (name, value, point index as step) and files, and end the run.

    Args:
        status: ``FINISHED``, ``FAILED`` (a point failed) or ``KILLED`` (interrupted).

    Raises:
        TrackingError: the store could not be reached or refused the update.
    """
    with _store_lock(tracking_uri):
        try:
            client = MlflowClient(tracking_uri=tracking_uri)
            now = int(time.time() * 1000)
            items = [Metric(k, v, now, step) for k, v, step in metrics]
            for i in range(0, len(items), BATCH_METRICS):
                client.log_batch(run_id, metrics=items[i : i + BATCH_METRICS])
            for p in artifacts:
                client.log_artifact(run_id, str(p))
            client.set_terminated(run_id, status)
        except Exception as exc:
            with contextlib.suppress(Exception):  # the store may be gone; the TrackingError below says so
                client.set_terminated(run_id, "FAILED")
            raise TrackingError(f"MLflow at {tracking_uri} failed while closing sweep run {run_id}: {exc}") from exc
