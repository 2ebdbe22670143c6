"""A sweep in MLflow: one parent run, whose params say what was swept and what was fixed and whose
metrics are the best point's, and one child run per point (:func:`suite.tracking.runs.log_result`
with ``parent_run_id``), each with the swept setting as a param.

What the parent logs is decided by :mod:`suite.run.sweep_table`; this module only writes it.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

from mlflow.entities import Metric, RunTag
from mlflow.tracking import MlflowClient

from suite.labels import flat_settings, setting_name, value_text
from suite.markdown import plain
from suite.results import Result
from suite.tracking.page import NAME_MAX, TAG_MAX
from suite.tracking.store import TrackingError, experiment_id, log_metrics, log_params, store_lock

KNOB_PARAM = "sweep.knob"
"""Param naming the swept setting, as the user wrote it (on the parent and on every child)."""
VALUE_PARAM = "sweep.value"
"""Param with a child's value of the swept setting, spelled as on the command line."""


def child_params(client: MlflowClient, parent_run_id: str, result: Result) -> dict[str, str]:
    """``sweep.knob`` and ``sweep.value`` for a point of the sweep ``parent_run_id``; {} when the
    parent is no sweep (no ``sweep.knob`` param) or the setting is not in the result's config.

    Read from the parent run, so a point logged later from the outbox (``trainbench sync``)
    gets them too; a parent that is not in this store (synced elsewhere) gives {}.
    """
    try:
        knob = client.get_run(parent_run_id).data.params.get(KNOB_PARAM)
    except Exception:  # the parent is in another store: the child is still logged, without the knob
        return {}
    if not knob:
        return {}
    name = setting_name(result.config, knob)
    text = value_text(flat_settings(result.config)[name]) if name is not None else None
    return {KNOB_PARAM: knob, VALUE_PARAM: plain(text)} if text is not None else {}


def start_parent_run(
    experiment: str, run_name: str, params: dict[str, str], tracking_uri: str, kind: str = "sweep"
) -> str:
    """Create the RUNNING parent run of a sweep and return its id.

    Its points are logged with ``log_result(..., parent_run_id=...)``; close it with
    :func:`finish_parent_run`.

    Args:
        experiment: experiment name (the workload's, so parent and children sit together).
        run_name: display name, e.g. ``mnist-dataheavy sweep of num_workers: 0, 1, 2``.
        params: the sweep's definition (:func:`suite.run.sweep.parent_params`).
        tracking_uri: the MLflow store.
        kind: the ``trainbench.kind`` tag: ``sweep``, or ``ladder`` for ``trainbench ladder``'s parent.

    Raises:
        TrackingError: the store could not be reached or refused the run.
    """
    with store_lock(tracking_uri):
        try:
            client = MlflowClient(tracking_uri=tracking_uri)
            exp = experiment_id(client, experiment, tracking_uri)
            run = client.create_run(exp, run_name=plain(run_name)[:NAME_MAX], tags={"trainbench.kind": kind})
            rid = str(run.info.run_id)
            log_params(client, rid, {k: plain(v) for k, v in params.items()})
        except Exception as exc:
            raise TrackingError(f"MLflow at {tracking_uri} could not start the sweep's parent run: {exc}") from exc
    return rid


def finish_parent_run(
    run_id: str,
    metrics: list[tuple[str, float, int]],
    artifacts: list[Path],
    status: str,
    tracking_uri: str,
    tags: dict[str, str] | None = None,
) -> None:
    """Attach a sweep's metrics (name, value, step; logged in this order), tags and files, and end the run.

    Args:
        metrics: :func:`suite.run.sweep_table.parent_metrics`.
        artifacts: the sweep's table (JSON and Markdown) and plot.
        status: ``FINISHED``, ``FAILED`` (a point failed) or ``KILLED`` (interrupted).
        tags: :func:`suite.run.sweep_table.parent_tags`.

    Raises:
        TrackingError: the store could not be reached or refused the update.
    """
    with store_lock(tracking_uri):
        try:
            client = MlflowClient(tracking_uri=tracking_uri)
            now = int(time.time() * 1000)
            log_metrics(client, run_id, [Metric(k, v, now, step) for k, v, step in metrics])
            if tags:
                client.log_batch(run_id, tags=[RunTag(k, v[:TAG_MAX]) for k, v in tags.items()])
            for p in artifacts:
                client.log_artifact(run_id, str(p))
            client.set_terminated(run_id, status)
        except Exception as exc:
            with contextlib.suppress(Exception):  # the store may be gone; the TrackingError below says so
                client.set_terminated(run_id, "FAILED")
            raise TrackingError(f"MLflow at {tracking_uri} failed while closing sweep run {run_id}: {exc}") from exc
