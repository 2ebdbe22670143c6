"""A real tiny ladder through the CLI: table, files, MLflow parent and children, and its best config run again.

fp32-only rungs (channels_last, allocator) so the test neither depends on bf16 being fast nor
on compile's minutes; the bf16 and compile rungs are planned in test_ladder_plan.py.
"""

from __future__ import annotations

import json
from pathlib import Path

from mlflow.tracking import MlflowClient

from suite.ladder.rungs import find_allocator
from suite.results import read_result
from suite.run.config_file import read_config_file
from tests.conftest import trainbench

TINY = ["batch_size=8", "image_size=32", "warmup_steps=1", "measure_steps=4", "repeats=2", "sampler_interval_s=0.2"]


def test_a_tiny_ladder_writes_its_table_files_runs_and_best_config(tmp_path: Path, store_uri: str) -> None:
    sets = [a for s in TINY for a in ("--set", s)]
    proc = trainbench(
        "ladder", "resnet50-cpu", "--rungs", "fp32,channels_last,allocator", *sets,
        "--output-dir", str(tmp_path / "o"), "--tracking-uri", store_uri, cwd=tmp_path, timeout=900,
        env={"COLUMNS": "200"},  # the table's columns side by side
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr + proc.stdout
    text = " ".join(proc.stdout.split())
    for column in ("samples/s", "95% CI", "x fp32", "step up", "significant"):
        assert column in text
    allocator = find_allocator()
    [ladder_json] = (tmp_path / "o").rglob("ladder.json")
    doc = json.loads(ladder_json.read_text())
    rows = {r["rung"]: r for r in doc["rungs"]}
    assert list(rows) == ["fp32", "channels_last", "allocator"]
    assert rows["fp32"]["status"] == rows["channels_last"]["status"] == "complete"
    assert rows["channels_last"]["vs_fp32"]["ratio"] > 0 and rows["channels_last"]["vs_below"]["method"] != "none"
    if allocator is None:
        assert rows["allocator"]["status"] == "skipped" and "apt-get install" in rows["allocator"]["why"]
    else:
        assert rows["allocator"]["adds"] == [f"allocator={allocator}"] and rows["allocator"]["status"] == "complete"
    ran = [r for r in rows.values() if r["status"] == "complete"]
    for r in ran:
        result = read_result(Path(r["result_path"]))
        assert result.config.params["precision"] == "fp32" and result.workload_info["precision"]["chosen"] == "fp32"
    assert (ladder_json.parent / "ladder.png").stat().st_size > 10_000
    # MLflow: one parent, each rung that ran a child of it
    client = MlflowClient(tracking_uri=store_uri)
    [exp] = [e for e in client.search_experiments() if e.name == "resnet50-cpu"]
    runs = client.search_runs([exp.experiment_id])
    [parent] = [r for r in runs if r.data.tags.get("trainbench.kind") == "ladder"]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert len(children) == len(ran) and parent.info.status == "FINISHED"
    assert parent.data.params["ladder.rungs"] == "fp32,channels_last,allocator"
    assert "best-config.json" in {a.path for a in client.list_artifacts(parent.info.run_id)}
    # the best config runs again through run --config, and submit takes that run
    best = ladder_json.parent / "best-config.json"
    config = read_config_file(best)
    assert config.workload == "resnet50-cpu" and config.overrides[: len(TINY)] == TINY
    assert doc["rungs"][doc["best"]]["overrides"] == config.overrides
    again = trainbench(
        "run", "--config", str(best), "--no-tracking", "--output-dir", str(tmp_path / "again"),
        "--system", "ladder-box", cwd=tmp_path,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr + again.stdout
    [path] = (tmp_path / "again").rglob("result.json")
    assert read_result(path).config.overrides == config.overrides
    submitted = trainbench(
        "submit", str(path), "--submitter", "me", "--system", "ladder-box", "--root", str(tmp_path / "subs"),
        "--describe-system", "--no-price", "a test machine", "--dry-run", cwd=tmp_path,
    )  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr + submitted.stdout
    assert "dry run: 1 result(s) checked, nothing copied" in submitted.stdout
    bad = trainbench("run", "numa-ddp", "--config", str(best), "--no-tracking", cwd=tmp_path)
    assert bad.returncode == 2 and "runs workload 'resnet50-cpu', not 'numa-ddp'" in bad.stderr
