"""Writing runs to MLflow (a measured result, a report) and reading a result back; a sweep's parent
run is in :mod:`suite.tracking.sweeps`."""

from __future__ import annotations

import contextlib
import json
import re
import tempfile
import time
from pathlib import Path

from mlflow.entities import Metric, RunTag
from mlflow.tracking import MlflowClient

from suite.files import MAX_FILE_BYTES
from suite.results import Result
from suite.tracking import page, series, sweeps
from suite.tracking.store import LOGGED_TAG, TrackingError, experiment_id, log_metrics, log_params, store_lock

REPORT_EXPERIMENT = "trainbench-report"
"""MLflow experiment that holds the runs of ``trainbench report``."""
RUN_ID = re.compile(r"^[0-9a-f]{32}$")
"""An MLflow run id (32 lowercase hex digits)."""


def _existing(client: MlflowClient, exp: str, result_id: str) -> tuple[str | None, list[str]]:
    """(run id that fully logged ``result_id``, ids of runs that broke off while logging it)."""
    runs = client.search_runs([exp], filter_string=f"tags.`trainbench.result_id` = '{result_id}'")
    done = [r.info.run_id for r in runs if r.data.tags.get(LOGGED_TAG) == "complete"]
    partial = [r.info.run_id for r in runs if r.data.tags.get(LOGGED_TAG) != "complete"]
    return (done[0] if done else None), partial


def _end_status(result: Result) -> str:
    if result.status == "complete":
        return "FINISHED"
    return "KILLED" if result.error and result.error.startswith("interrupted") else "FAILED"


def log_result(
    result: Result,
    result_path: Path,
    extra_artifacts: list[Path],
    tracking_uri: str,
    parent_run_id: str | None = None,
) -> str:
    """Record ``result`` as one MLflow run and return the MLflow run id.

    The run page (see :mod:`suite.tracking.page` and :mod:`suite.tracking.series`):
    the name ``<workload> <precision> bs<N> [<knobs>] @ <system>``; start and end
    times of the measurement itself, so the Duration is real; the description
    (throughput, 95% CI, verdicts, hardware); the throughput and its CI as the first
    model metrics; per-repeat and per-step metrics at their wall-clock times; the
    sampler's CPU and memory as ``system/`` metrics; hardware tags; the config as
    params spelled as on the command line. Artifacts: the result file, the
    environment (``environment.json``) and ``extra_artifacts``.

    Idempotent: a result (``trainbench.result_id`` tag) that is already fully logged
    is not logged again, and a run that broke off while logging it is deleted and
    replaced, so a retry (``trainbench sync``) never creates duplicates. Writes to a
    SQLite store hold an inter-process lock.

    With ``parent_run_id`` the run is a child of that run (MLflow's
    ``mlflow.parentRunId`` tag), as for the points of a sweep; a sweep's child also
    gets the ``sweep.knob`` and ``sweep.value`` params
    (:func:`suite.tracking.sweeps.child_params`). The run ends FINISHED for a complete
    result, KILLED for an interrupted one and FAILED for any other.

    Raises:
        TrackingError: the store could not be reached or refused the run.
    """
    with store_lock(tracking_uri):
        try:
            client = MlflowClient(tracking_uri=tracking_uri)
            exp = experiment_id(client, result.workload, tracking_uri)
            done, partial = _existing(client, exp, result.run_id)
            if done is not None:
                return done
            for stale in partial:
                client.delete_run(stale)
            tags = page.tags(result)
            tags["trainbench.clock"] = series.clock(result)[1]
            if parent_run_id:
                tags["mlflow.parentRunId"] = parent_run_id
            start_ms, end_ms = series.run_times_ms(result)
            run = client.create_run(exp, start_time=start_ms, run_name=page.run_name(result), tags=tags)
        except Exception as exc:
            raise TrackingError(f"MLflow at {tracking_uri} could not start a run: {exc}") from exc
        rid = run.info.run_id
        try:
            # the headline first: the run page lists model metrics in the order they were first logged
            log_metrics(client, rid, series.headline(result))
            log_metrics(client, rid, series.summary_metrics(result))
            log_metrics(client, rid, series.history(result))
            log_metrics(client, rid, series.system_metrics(result))
            params = page.params(result)
            if parent_run_id:
                params |= sweeps.child_params(client, parent_run_id, result)
            log_params(client, rid, params)
            client.log_batch(rid, tags=[RunTag("trainbench.result_file", str(result_path))])
            client.log_artifact(rid, str(result_path))
            with tempfile.TemporaryDirectory() as tmp:
                env_path = Path(tmp) / "environment.json"
                env_path.write_text(json.dumps(result.environment, indent=1))
                client.log_artifact(rid, str(env_path))
            for p in extra_artifacts:
                client.log_artifact(rid, str(p))
            client.set_tag(rid, LOGGED_TAG, "complete")
            client.set_terminated(rid, _end_status(result), end_time=max(end_ms, start_ms))
        except Exception as exc:
            with contextlib.suppress(Exception):  # the store may be gone; the TrackingError below says so
                client.set_terminated(rid, "FAILED")
            raise TrackingError(f"MLflow at {tracking_uri} failed while logging run {rid}: {exc}") from exc
    return str(rid)


def fetch_result(run_id: str, tracking_uri: str, dest: Path) -> Path:
    """Download the result file that MLflow run ``run_id`` was logged from, into directory ``dest``.

    Only runs that :func:`log_result` wrote qualify (a ``trainbench.result_file``
    tag naming the artifact). The artifact must be at most
    :data:`suite.files.MAX_FILE_BYTES`; read it with
    :func:`suite.results.read_result`, which checks its schema and digest.

    Raises:
        TrackingError: not a run id, the run or its result artifact is missing or too
            large, or the store could not be reached.
    """
    if not RUN_ID.match(run_id):
        raise TrackingError(f"{run_id!r} is not an MLflow run id (32 hex digits)")
    try:
        client = MlflowClient(tracking_uri=tracking_uri)
        run = client.get_run(run_id)
        name = Path(run.data.tags.get("trainbench.result_file", "")).name
        if not name:
            raise TrackingError(f"MLflow run {run_id} in {tracking_uri} was not logged by trainbench (no result file)")
        sizes = {a.path: a.file_size for a in client.list_artifacts(run_id)}
        if name not in sizes:
            raise TrackingError(f"MLflow run {run_id} in {tracking_uri} has no artifact {name}")
        if (sizes[name] or 0) > MAX_FILE_BYTES:
            raise TrackingError(f"MLflow run {run_id}: {name} is {sizes[name]} bytes, over the result limit")
        dest.mkdir(parents=True, exist_ok=True)
        return Path(client.download_artifacts(run_id, name, str(dest)))
    except TrackingError:
        raise
    except Exception as exc:
        raise TrackingError(f"MLflow at {tracking_uri} could not return run {run_id}: {exc}") from exc


def log_report(
    artifacts: list[Path],
    metrics: dict[str, float],
    params: dict[str, str],
    tracking_uri: str,
    experiment: str = REPORT_EXPERIMENT,
    description: str | None = None,
) -> str:
    """Record one ``trainbench report`` as an MLflow run and return its run id.

    Args:
        artifacts: files to attach (the Markdown and JSON reports, the PNG chart).
        metrics: metric name -> value (samples/s and samples per dollar per system), keys as
            :func:`suite.validation.ranking.mlflow_metrics` writes them (letters, digits,
            ``_ - . / space``: what MLflow accepts).
        params: what the report was made from (submissions path, bands file).
        tracking_uri: the MLflow store.
        experiment: experiment name (created beside a SQLite store if missing).
        description: the run page's description (Markdown, already escaped): the recommendations.

    Raises:
        TrackingError: the store could not be reached or refused the run (an invalid metric
            key included).
    """
    tags = {"trainbench.kind": "report"}
    if description:
        tags["mlflow.note.content"] = description[: page.TAG_MAX]
    with store_lock(tracking_uri):
        try:
            client = MlflowClient(tracking_uri=tracking_uri)
            exp = experiment_id(client, experiment, tracking_uri)
            run = client.create_run(exp, run_name="trainbench report", tags=tags)
        except Exception as exc:
            raise TrackingError(f"MLflow at {tracking_uri} could not start a report run: {exc}") from exc
        rid = run.info.run_id
        try:
            now = int(time.time() * 1000)
            log_params(client, rid, params)
            log_metrics(client, rid, [Metric(k, float(v), now, 0) for k, v in metrics.items()])
            for p in artifacts:
                client.log_artifact(rid, str(p))
            client.set_terminated(rid, "FINISHED")
        except Exception as exc:
            with contextlib.suppress(Exception):  # the store may be gone; the TrackingError below says so
                client.set_terminated(rid, "FAILED")
            raise TrackingError(f"MLflow at {tracking_uri} failed while logging report run {rid}: {exc}") from exc
    return str(rid)
