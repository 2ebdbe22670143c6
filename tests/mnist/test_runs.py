"""Real runs of mnist-dataheavy through the CLI: the input-bound verdict in both directions, sweeps, MLflow."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mlflow.tracking import MlflowClient

from suite.results import read_result
from tests.conftest import trainbench
from tests.mnist.idxfiles import mnist_arrays, write_split

TINY = [
    *("--set", "batch_size=4", "--set", "intra_op_threads=1", "--set", "synthetic_samples=64"),
    *("--set", "warmup_steps=1", "--set", "warmup_seconds=0", "--set", "measure_steps=4"),
    *("--set", "measure_seconds=0", "--set", "repeats=1", "--set", "sampler_interval_s=0.1"),
    *("--set", "calibration_samples=4"),
]
"""Seconds-long real runs: batch 4, one torch thread, 1 warm-up and 4 measured steps."""


def _sweep_json_path(out: Path) -> Path:
    [path] = sorted(out.rglob("sweep.json"))
    return path


def _sweep_json(out: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(_sweep_json_path(out).read_text())
    return doc


@pytest.mark.slow
def test_verdict_is_right_in_both_directions_and_the_sweep_is_tracked(tmp_path: Path, store_uri: str) -> None:
    """Heavy preprocessing on the trainer (0 workers) is input-bound; the light pipeline is compute-bound."""
    out = tmp_path / "out"
    proc = trainbench(
        "run", "mnist-dataheavy", *TINY, "--set", "num_workers=0", "--sweep", "preprocess_repeats=0,24",
        "--output-dir", str(out), "--tracking-uri", store_uri, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "sweep of preprocess_repeats" in proc.stdout and "sweep.png" in proc.stdout
    doc = _sweep_json(out)
    light, heavy = doc["points"]
    assert light["value"] == "0" and heavy["value"] == "24"
    assert light["verdict"] == "compute-bound" and light["input_bound_fraction"] < 0.1, light
    assert heavy["verdict"] == "input-bound" and heavy["input_bound_fraction"] >= 0.5, heavy
    assert heavy["preprocessing"]["cpu_ms_per_sample"] > 20 * light["preprocessing"]["cpu_ms_per_sample"]
    assert heavy["preprocessing"]["placement"] == "trainer" and heavy["preprocessing"]["workers"] == 0
    result = read_result(Path(heavy["result_path"]))
    assert result.diagnosis is not None and result.diagnosis.message.startswith("input-bound: ")
    assert "add loader workers or offload preprocessing" in result.diagnosis.message
    assert "% busy during measurement" in result.diagnosis.message
    assert result.workload_info["parameters"] == 1_199_882  # the PyTorch MNIST example net
    assert (_sweep_json_path(out).parent / "sweep.png").stat().st_size > 10_000

    client = MlflowClient(tracking_uri=store_uri)
    exp = client.get_experiment_by_name("mnist-dataheavy")
    assert exp is not None
    runs = client.search_runs([exp.experiment_id])
    [parent] = [r for r in runs if r.data.tags.get("trainbench.kind") == "sweep"]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert len(runs) == 3 and len(children) == 2
    assert parent.info.status == "FINISHED" and parent.data.params["sweep.knob"] == "preprocess_repeats"
    verdicts = {c.data.params["params.preprocess_repeats"]: c.data.tags["trainbench.verdict"] for c in children}
    assert verdicts == {"0": "compute-bound", "24": "input-bound"}
    assert all(c.data.metrics["preprocess_cpu_ms_per_sample"] > 0 for c in children)
    history = client.get_metric_history(parent.info.run_id, "sweep_input_bound_fraction")
    assert sorted(m.step for m in history) == [0, 24]  # integer values: the step is the swept value
    assert {a.path for a in client.list_artifacts(parent.info.run_id)} >= {"sweep.json", "sweep.md", "sweep.png"}


@pytest.mark.slow
def test_a_failed_point_is_kept_and_the_sweep_fails(tmp_path: Path, store_uri: str) -> None:
    """Real IDX data for the first point, a missing directory for the second: table, JSON and parent say so."""
    good = tmp_path / "mnist"
    write_split(good, "train", *mnist_arrays(32))
    out = tmp_path / "out"
    proc = trainbench(
        "run", "mnist-dataheavy", *TINY, "--set", "preprocess_repeats=1", "--set", "data=idx",
        "--sweep", f"data_dir={good},{tmp_path / 'absent'}", "--output-dir", str(out), "--tracking-uri", store_uri,
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr + proc.stdout
    assert "1 of 2 points failed" in proc.stderr and "failed" in proc.stdout
    ok, bad = _sweep_json(out)["points"]
    assert ok["status"] == "complete" and ok["preprocessing"]["chain_repeats"] == 1
    assert read_result(Path(ok["result_path"])).workload_info["data_source"] == str(good)
    assert bad["status"] == "failed" and "is not a directory" in bad["error"]
    client = MlflowClient(tracking_uri=store_uri)
    exp = client.get_experiment_by_name("mnist-dataheavy")
    assert exp is not None
    runs = client.search_runs([exp.experiment_id])
    [parent] = [r for r in runs if r.data.tags.get("trainbench.kind") == "sweep"]
    assert parent.info.status == "FAILED"
    statuses = sorted(r.info.status for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id)
    assert statuses == ["FAILED", "FINISHED"]


def test_bad_sweeps_fail_before_anything_runs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    for sweep, message in [
        ("num_workers=0,-1", "--sweep point num_workers=-1"),
        ("num_workers", "expected KEY=V1,V2"),
        ("num_workers=0,,1", "every value must be non-empty"),
        ("num_workers=1,1", "appear more than once"),
        ("no_such_knob=1,2", "unknown setting"),
    ]:
        proc = trainbench(
            "run", "mnist-dataheavy", "--no-tracking", "--output-dir", str(out), "--sweep", sweep, cwd=tmp_path
        )
        assert proc.returncode == 2, (sweep, proc.stderr)
        assert message in proc.stderr, (sweep, proc.stderr)
    clash = trainbench(
        "run", "mnist-dataheavy", "--no-tracking", "--output-dir", str(out), "--set", "num_workers=1",
        "--sweep", "num_workers=0,1", cwd=tmp_path,
    )  # fmt: skip
    assert clash.returncode == 2 and "conflicts with --set num_workers=1" in clash.stderr
    assert not out.exists() or not any(out.rglob("*.json"))
