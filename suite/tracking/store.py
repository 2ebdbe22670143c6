"""The MLflow store: its URI, its experiments, the lock around SQLite writes, batched writes, and the one error."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from urllib.parse import unquote, urlparse

from filelock import FileLock
from mlflow.entities import Metric, Param
from mlflow.tracking import MlflowClient

from suite.errors import TrackingError as TrackingError  # defined there so catching it needs no MLflow

DEFAULT_DB = "mlflow.db"
LOGGED_TAG = "trainbench.logged"
"""Set to "complete" as the last step of logging a run; runs without it broke off midway."""
LOCK_TIMEOUT_S = 300.0
"""Seconds a run waits for another process's write to a SQLite store."""
PARAM_MAX = 6000
"""MLflow's limit on a param value's length (characters)."""
BATCH_METRICS = 1000
"""MLflow's limit on metrics per ``log_batch`` call."""
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
"""MLflow's experiment tag for the experiment's type (the UI's ``ExperimentKind``: ``genai_development``,
``custom_model_development``, ...; read from MLflow 3.17's UI bundle and its onboarding skill)."""
EXPERIMENT_TAGS = {EXPERIMENT_KIND_TAG: "custom_model_development"}
"""Marks an experiment as model training (MLflow's "traditional ML" kind): runs, metrics and charts, not traces.

MLflow 3.17's UI picks its view from a per-browser workflow selector (URL ``workflowType=``, else the
browser's saved choice, GenAI by default) before the tag, so the links trainbench prints also carry
``workflowType=machine_learning`` (:data:`suite.tracking.links.ML_VIEW`)."""
BATCH_PARAMS = 100
"""MLflow's limit on params per ``log_batch`` call."""

# An unreachable tracking server must not hold a finished run hostage for minutes:
# fewer retries and a shorter timeout than MLflow's defaults (7 retries, 120 s),
# unless the user set their own. A failed upload goes to the outbox (trainbench sync).
os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "20")


def default_tracking_uri(cwd: Path | None = None) -> str:
    """``MLFLOW_TRACKING_URI`` if set, else embedded SQLite ``mlflow.db`` in ``cwd``."""
    env = os.environ.get("MLFLOW_TRACKING_URI")
    if env:
        return env
    return f"sqlite:///{((cwd or Path.cwd()) / DEFAULT_DB).resolve()}"


def _sqlite_path(tracking_uri: str) -> Path | None:
    if urlparse(tracking_uri).scheme != "sqlite":
        return None
    return Path(unquote(tracking_uri[len("sqlite:///") :]))


def _artifact_root(tracking_uri: str) -> str | None:
    """For a SQLite store, keep artifacts beside the database (``mlartifacts/``)."""
    db = _sqlite_path(tracking_uri)
    return None if db is None else (db.parent / "mlartifacts").resolve().as_uri()


def experiment_id(client: MlflowClient, name: str, tracking_uri: str) -> str:
    """Id of experiment ``name``, creating it (artifacts beside a SQLite store, EXPERIMENT_TAGS) if needed.

    An existing experiment without an experiment kind (one created before trainbench set it, or by
    another tool) is marked as model training; a kind someone set is kept.
    """
    exp = client.get_experiment_by_name(name)
    if exp is not None:
        if EXPERIMENT_KIND_TAG not in exp.tags:
            client.set_experiment_tag(exp.experiment_id, EXPERIMENT_KIND_TAG, EXPERIMENT_TAGS[EXPERIMENT_KIND_TAG])
        return str(exp.experiment_id)
    root = _artifact_root(tracking_uri)
    location = f"{root}/{name}" if root else None
    return str(client.create_experiment(name, artifact_location=location, tags=EXPERIMENT_TAGS))


def store_lock(tracking_uri: str) -> AbstractContextManager[object]:
    """An inter-process lock around writes to a SQLite store (two runs logging at once).

    SQLite allows one writer; MLflow's first use of a new database also runs schema
    migrations, which must not interleave. Other stores serialize on the server.
    """
    db = _sqlite_path(tracking_uri)
    if db is None:
        return contextlib.nullcontext()
    db.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(str(db) + ".trainbench.lock", timeout=LOCK_TIMEOUT_S)


def log_metrics(client: MlflowClient, run_id: str, metrics: Sequence[Metric]) -> None:
    """Log ``metrics`` to run ``run_id`` in batches of at most :data:`BATCH_METRICS`."""
    for i in range(0, len(metrics), BATCH_METRICS):
        client.log_batch(run_id, metrics=list(metrics[i : i + BATCH_METRICS]))


def log_params(client: MlflowClient, run_id: str, params: dict[str, str]) -> None:
    """Log ``params`` (values cut at :data:`PARAM_MAX` characters) in batches of at most :data:`BATCH_PARAMS`."""
    items = [Param(k, v[:PARAM_MAX]) for k, v in params.items() if v is not None]
    for i in range(0, len(items), BATCH_PARAMS):
        client.log_batch(run_id, params=items[i : i + BATCH_PARAMS])
