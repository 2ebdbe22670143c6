"""The hint printed after a run names the store the run went to (the run page's URL on a server is
tested with a real sweep in tests/run/test_sweep_tracking.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from suite.tracking import ui_hint


def _run(uri: str) -> tuple[str, str]:
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("hint")
    return exp, client.create_run(exp).info.run_id


def test_the_store_make_ui_serves_gets_make_ui(tmp_path: Path) -> None:
    db = tmp_path / "mlflow.db"
    exp, rid = _run(f"sqlite:///{db}")
    hint = ui_hint(f"sqlite:///{db}", rid, make_store=db)
    page = f"http://127.0.0.1:5000/#/experiments/{exp}/runs/{rid}?workflowType=machine_learning"
    assert hint == f"Open the results UI with make ui, then {page}"


def test_another_store_is_named_absolutely(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    exp, rid = _run("sqlite:///other.db")  # relative to the working directory
    hint = ui_hint("sqlite:///other.db", rid, make_store=tmp_path / "mlflow.db")
    store = f"sqlite:///{tmp_path / 'other.db'}"
    assert f"make ui MLFLOW_TRACKING_URI={store} (or mlflow ui --backend-store-uri {store})" in hint
    page = f"http://127.0.0.1:5000/#/experiments/{exp}/runs/{rid}?workflowType=machine_learning"
    assert hint.endswith(f"then {page}")


def test_a_store_it_cannot_serve_is_only_named() -> None:
    assert ui_hint("databricks://profile", "0" * 32) == "The tracking store databricks://profile holds the run."
