"""trainbench's MLflow experiments are model-training experiments, on a real SQLite store.

MLflow 3.17 reads an experiment's type from its ``mlflow.experimentKind`` tag
(``custom_model_development`` is traditional ML: runs, metrics and charts; ``genai_development``
lists runs as "Evaluation runs" beside traces). Its UI also keeps a per-browser workflow choice,
GenAI by default, that a ``workflowType=machine_learning`` query overrides: the links trainbench
prints carry it.
"""

from __future__ import annotations

from pathlib import Path

from mlflow.tracking import MlflowClient

from suite.tracking.links import ML_VIEW, ui_hint
from suite.tracking.store import EXPERIMENT_KIND_TAG, experiment_id


def test_a_new_experiment_is_marked_model_training(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp = experiment_id(client, "resnet50-cpu", uri)
    assert client.get_experiment(exp).tags[EXPERIMENT_KIND_TAG] == "custom_model_development"
    assert experiment_id(client, "resnet50-cpu", uri) == exp  # found again, not created twice


def test_an_experiment_made_before_the_tag_is_marked_and_a_chosen_kind_is_kept(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    old = client.create_experiment("resnet50-gpu-horovod")  # as an older trainbench or plain MLflow made it
    assert EXPERIMENT_KIND_TAG not in client.get_experiment(old).tags
    assert experiment_id(client, "resnet50-gpu-horovod", uri) == old
    assert client.get_experiment(old).tags[EXPERIMENT_KIND_TAG] == "custom_model_development"
    chosen = client.create_experiment("mine", tags={EXPERIMENT_KIND_TAG: "genai_development"})
    experiment_id(client, "mine", uri)
    assert client.get_experiment(chosen).tags[EXPERIMENT_KIND_TAG] == "genai_development"


def test_the_printed_link_opens_the_model_training_view(tmp_path: Path) -> None:
    db = tmp_path / "mlflow.db"
    uri = f"sqlite:///{db}"
    client = MlflowClient(tracking_uri=uri)
    rid = client.create_run(experiment_id(client, "resnet50-cpu", uri)).info.run_id
    assert ui_hint(uri, rid, make_store=db).endswith(f"/runs/{rid}?{ML_VIEW}")
