"""Where to open a logged run: its page on a tracking server, or the command that serves a local store.

``make ui`` serves ``MLFLOW_TRACKING_URI``, which the Makefile sets to the checkout's
``mlflow.db``; a run logged elsewhere (``--tracking-uri``) needs that URI named, and a
run logged to a tracking server is already served: its page's URL is the answer.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from urllib.parse import unquote, urlparse

from mlflow.tracking import MlflowClient

from suite.provenance import PROJECT_ROOT
from suite.tracking.store import DEFAULT_DB

UI_URL = "http://127.0.0.1:5000"
"""Where ``make ui`` serves (the Makefile's UI_HOST and UI_PORT)."""
ML_VIEW = "workflowType=machine_learning"
"""The query that opens MLflow 3.17's UI in its model-training view (runs, metrics, charts), whatever the
browser's saved workflow choice (GenAI by default, which lists runs as "Evaluation runs")."""
SERVER_SCHEMES = frozenset({"http", "https"})


def _local_uri(tracking_uri: str) -> str | None:
    """The store as an absolute URI when it is on this machine (SQLite or a file store), else None."""
    parsed = urlparse(tracking_uri)
    if parsed.scheme == "sqlite":
        path = Path(unquote(tracking_uri[len("sqlite:///") :]))
        return f"sqlite:///{path.resolve()}"
    if parsed.scheme in ("", "file"):
        path = Path(unquote(parsed.path if parsed.scheme == "file" else tracking_uri))
        return path.resolve().as_uri()
    return None


def _run_path(tracking_uri: str, run_id: str) -> str:
    """``/#/experiments/<id>/runs/<run id>?workflowType=machine_learning`` (MLflow's UI route, in its model-training
    view), or ``""`` when the run cannot be read back."""
    try:
        exp = MlflowClient(tracking_uri=tracking_uri).get_run(run_id).info.experiment_id
    except Exception:  # the hint must never fail a run that is already logged
        return ""
    return f"/#/experiments/{exp}/runs/{run_id}?{ML_VIEW}"


def ui_hint(tracking_uri: str, run_id: str, make_store: Path = PROJECT_ROOT / DEFAULT_DB) -> str:
    """One sentence saying where to look at MLflow run ``run_id`` (plain text, no markup).

    - a tracking server (http, https): the URL of the run's page on it;
    - ``make_store``, the SQLite file ``make ui`` serves by default (the checkout's
      ``mlflow.db``): ``make ui`` and the page's URL;
    - another local store: ``make ui MLFLOW_TRACKING_URI=<store>`` (or ``mlflow ui
      --backend-store-uri <store>`` outside a checkout) and the page's URL;
    - any other store: its URI.
    """
    scheme = urlparse(tracking_uri).scheme
    if scheme in SERVER_SCHEMES:
        return f"Open the run page: {tracking_uri.rstrip('/')}{_run_path(tracking_uri, run_id)}"
    local = _local_uri(tracking_uri)
    if local is None:
        return f"The tracking store {tracking_uri} holds the run."
    page = f"{UI_URL}{_run_path(tracking_uri, run_id)}"
    if local == f"sqlite:///{make_store.resolve()}":
        return f"Open the results UI with make ui, then {page}"
    store = shlex.quote(local)
    return (
        f"Open the results UI with make ui MLFLOW_TRACKING_URI={store} "
        f"(or mlflow ui --backend-store-uri {store}), then {page}"
    )
