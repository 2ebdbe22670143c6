"""Real sweeps of mnist-dataheavy (seconds-long, fp32) read back from a real MLflow store: the parent
run answers with the best point, its params say what was swept and what was fixed, every child
carries the knob, the table and plot are artifacts, and the plot draws what the knob is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import pytest
from matplotlib.container import BarContainer, ErrorbarContainer
from matplotlib.figure import Figure
from mlflow.entities import Run
from mlflow.tracking import MlflowClient

from suite.run.sweep_plot import sweep_figure
from tests.conftest import trainbench
from tests.faults.helpers import MlflowServer
from tests.mnist.test_runs import TINY

matplotlib.use("Agg")

STEPS = ["--set", "measure_steps=8", "--set", "num_workers=0"]
"""8 measured steps: enough batch means for a 95% CI on most machines (a point without one is checked too)."""


def sticks_out(fig: Figure) -> list[float]:
    """How far (inches) the drawn artists of ``fig`` reach past its left, bottom, right and top edges;
    all four must be <= 0 (nothing cut). Uses matplotlib's own tight bounding box of what is drawn."""
    fig.canvas.draw()
    tight = fig.get_tightbbox(fig.canvas.get_renderer())  # type: ignore[attr-defined]
    width, height = fig.get_size_inches()
    return [round(v, 3) for v in (-tight.x0, -tight.y0, tight.x1 - width, tight.y1 - height)]


def joined_lines(fig: Figure) -> list[Any]:
    """Lines that join two or more points (a sweep plot must have none)."""
    return [
        line
        for ax in fig.axes
        for line in ax.get_lines()
        if np.size(line.get_xdata()) > 1 and line.get_linestyle() not in ("None", "none", "", " ")
    ]


def _sweep(out: Path) -> tuple[Path, dict[str, Any]]:
    [path] = sorted(out.rglob("sweep.json"))
    doc: dict[str, Any] = json.loads(path.read_text())
    return path.parent, doc


def _runs(client: MlflowClient) -> tuple[Run, list[Run]]:
    exp = client.get_experiment_by_name("mnist-dataheavy")
    assert exp is not None
    runs = client.search_runs([exp.experiment_id])
    [parent] = [r for r in runs if r.data.tags.get("trainbench.kind") == "sweep"]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    return parent, children


def _check_parent_is_the_best_point(client: MlflowClient, parent: Run, children: list[Run], knob: str) -> None:
    best = max(children, key=lambda c: c.data.metrics["throughput_samples_per_s"])
    pm, bm = parent.data.metrics, best.data.metrics
    assert pm["throughput_samples_per_s"] == pytest.approx(bm["throughput_samples_per_s"], rel=1e-6)
    assert pm["input_bound_fraction"] == pytest.approx(bm["input_bound_fraction"], rel=1e-6)
    for key in ("throughput_ci95_low", "throughput_ci95_high"):
        assert (key in pm) == (key in bm) and pm.get(key, 0) == pytest.approx(bm.get(key, 0), rel=1e-6)
    assert parent.data.tags["trainbench.sweep_best"] == f"{knob}={best.data.params['sweep.value']}"
    assert parent.data.tags["trainbench.sweep_best_run_id"] == best.info.run_id
    assert "Best:" in parent.data.tags["mlflow.note.content"]
    for c in children:  # the knob is a param of every child: MLflow's x-axis
        assert c.data.params["sweep.knob"] == knob
        assert c.data.params["sweep.value"] == c.data.params[f"params.{knob}"]
    assert {a.path for a in client.list_artifacts(parent.info.run_id)} == {"sweep.json", "sweep.md", "sweep.png"}


def _check_plot(rows: list[dict[str, Any]], key: str, categorical: bool) -> Figure:
    fig = sweep_figure(key, rows, f"mnist-dataheavy: sweep of {key}")
    ax = fig.axes[0]
    bars = [c for c in ax.containers if isinstance(c, BarContainer)]
    assert len(bars) == (1 if categorical else 0)
    if categorical:
        assert len(bars[0]) == len(rows)
    with_ci = [r for r in rows if r["throughput_ci95"]]
    errorbars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert sum(len(c.lines[2][0].get_segments()) for c in errorbars) == len(with_ci)
    [legend] = fig.legends
    labels = [t.get_text() for t in legend.get_texts()]
    assert "throughput, samples/s" in labels and "input-bound fraction (right axis)" in labels
    assert any(label.startswith("best: ") for label in labels)
    assert ("95% CI of the throughput" in labels) == bool(with_ci)
    assert joined_lines(fig) == [] and max(sticks_out(fig)) <= 0.01
    return fig


@pytest.mark.slow
def test_a_categorical_sweep_on_a_tracking_server(tmp_path: Path, empty_store_template: Path) -> None:
    """pin_memory=false,true against a real `mlflow server`: bars, the best point, and the run page's URL."""
    server = MlflowServer(tmp_path / "server", store=empty_store_template)
    server.root.mkdir()
    server.start()
    try:
        out = tmp_path / "out"
        proc = trainbench(
            "run", "mnist-dataheavy", *TINY, *STEPS, "--sweep", "pin_memory=false,true",
            "--output-dir", str(out), "--tracking-uri", server.uri, cwd=tmp_path, env={"COLUMNS": "200"},
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr + proc.stdout
        client = MlflowClient(tracking_uri=server.uri)
        parent, children = _runs(client)
        assert len(children) == 2 and parent.info.status == "FINISHED"
        url = f"{server.uri}/#/experiments/{parent.info.experiment_id}/runs/{parent.info.run_id}"
        assert url in " ".join(proc.stdout.split())  # the hint is the run page on the server, not `make ui`
        params = parent.data.params
        assert params["sweep.knob"] == "pin_memory" and params["sweep.values"] == "false,true"
        assert params["params.num_workers"] == "0" and params["windows.measure_steps"] == "8"
        assert params["params.batch_size"] == "4" and not any(k.startswith("set.") for k in params)
        assert params["sweep.step"] == "the point's index in sweep.values"
        _check_parent_is_the_best_point(client, parent, children, "pin_memory")
        history = client.get_metric_history(parent.info.run_id, "sweep_throughput_samples_per_s")
        assert sorted(m.step for m in history) == [0, 1]
        md = Path(client.download_artifacts(parent.info.run_id, "sweep.md", str(tmp_path / "dl"))).read_text()
        assert "| pin\\_memory | samples/s | 95% CI |" in md and "| false |" in md and "| true |" in md
        directory, doc = _sweep(out)
        assert (directory / "sweep.png").stat().st_size > 10_000
        assert doc["best"] == parent.data.tags["trainbench.sweep_best"].split("=", 1)[1]
        _check_plot(doc["points"], "pin_memory", categorical=True)
    finally:
        server.stop()


@pytest.mark.slow
def test_a_numeric_sweep_in_sqlite(tmp_path: Path, store_uri: str) -> None:
    """preprocess_repeats=0,2 in a SQLite store: steps are the values, points on a numeric axis, the UI hint
    names the store, and the table fits a 60-column terminal."""
    out = tmp_path / "out"
    proc = trainbench(
        "run", "mnist-dataheavy", *TINY, *STEPS, "--sweep", "preprocess_repeats=0,2",
        "--output-dir", str(out), "--tracking-uri", store_uri, cwd=tmp_path, env={"COLUMNS": "60"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr + proc.stdout
    client = MlflowClient(tracking_uri=store_uri)
    parent, children = _runs(client)
    assert len(children) == 2 and parent.data.params["sweep.step"] == "the swept value"
    _check_parent_is_the_best_point(client, parent, children, "preprocess_repeats")
    history = client.get_metric_history(parent.info.run_id, "sweep_input_bound_fraction")
    assert sorted(m.step for m in history) == [0, 2]  # the MLflow chart's x-axis is the knob
    said = " ".join(proc.stdout.split())
    assert f"make ui MLFLOW_TRACKING_URI={store_uri}" in said
    assert f"/#/experiments/{parent.info.experiment_id}/runs/{parent.info.run_id}" in said
    table = proc.stdout[proc.stdout.index("sweep of preprocess_repeats") :].split("sweep: ")[0]
    assert max(len(line) for line in table.splitlines()) <= 60
    assert "preprocess_repeats" in table and "samples/s" in table
    _, doc = _sweep(out)
    fig = _check_plot(doc["points"], "preprocess_repeats", categorical=False)
    assert list(fig.axes[0].get_xticks()) == [0.0, 2.0]
