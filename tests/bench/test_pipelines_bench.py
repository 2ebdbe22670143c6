"""``trainbench bench-pipelines``: the synthetic ceiling and the real-data pipelines through the real run
path on one device (here the CPU, with a tiny generated set), and the verdict in words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from suite.bench.pipelines import Pricing, Row
from suite.bench.pipelines_report import preprocessing_cores, verdict
from suite.datasets.image_sets import MakeSettings, make_imagenet_like
from suite.results import read_result
from tests.conftest import TINY_GPU_WORKLOAD_ON_CPU, trainbench
from tests.slurm.validate import validator_errors

TINY = [*TINY_GPU_WORKLOAD_ON_CPU, "num_workers=1"]


def test_the_ceiling_then_the_dataloader_on_cpu(tmp_path: Path) -> None:
    data = tmp_path / "set"
    make_imagenet_like(data, MakeSettings(classes=2, images_per_class=8, seed=3, long_side=64))
    args = [a for s in TINY for a in ("--set", s)]
    out = tmp_path / "bench"
    proc = trainbench(
        "bench-pipelines", str(data), "--pipelines", "dataloader", *args, "--price-per-hour", "2.0",
        "--output-dir", str(out), cwd=tmp_path, timeout=900, env={"COLUMNS": "200"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr + proc.stdout
    doc = json.loads((out / "bench-pipelines.json").read_text())
    assert doc["complete"] and [r["pipeline"] for r in doc["rows"]] == ["synthetic", "dataloader"]
    syn, dl = doc["rows"]
    for row in (syn, dl):
        assert row["error"] is None and row["images_per_s"] > 0 and row["world_size"] == 1
        assert row["usd_per_hour"] == 2.0
        assert row["samples_per_dollar"] == pytest.approx(row["images_per_s"] * 3600 / 2.0)
        assert row["cores_used"] is not None and 0 < row["cores_used"] <= doc["host_cores"] + 0.5
        r = read_result(Path(row["result"]))
        assert r.summary is not None and r.summary.throughput == pytest.approx(row["images_per_s"])
        assert validator_errors(json.loads(Path(row["result"]).read_text())) == []
    assert syn["ceiling_share"] == pytest.approx(1.0)
    assert dl["ceiling_share"] == pytest.approx(dl["images_per_s"] / syn["images_per_s"])
    assert read_result(Path(dl["result"])).config.params["input_pipeline"] == "dataloader"
    assert any(line.startswith("dataloader reaches") for line in doc["verdict"])
    assert "input pipelines against the synthetic ceiling" in proc.stdout


def test_a_bad_pipeline_or_setting_is_refused_before_anything_runs(tmp_path: Path) -> None:
    proc = trainbench("bench-pipelines", str(tmp_path), "--pipelines", "ffcv", cwd=tmp_path)
    assert proc.returncode == 2 and "unknown pipeline(s) ['ffcv']" in proc.stderr
    proc = trainbench("bench-pipelines", str(tmp_path), "--set", "batch_size=0", cwd=tmp_path)
    assert proc.returncode == 2 and "batch_size" in proc.stderr
    assert not (tmp_path / "results").exists()


def test_the_verdict_in_words_for_the_issues_h100_figures() -> None:
    """The H100 figures of issue 34 (synthetic 3,895 images/s; the DataLoader 1,372 with 15 workers
    busy), with made-up rows for the remedies: the words and the arithmetic behind them."""
    rows = [
        Row("synthetic", 3895.0, 1.0, 0.0, 0.01, cores_used=1.0, usd_per_hour=4.0, samples_per_dollar=3.5e6),
        Row("dataloader", 1372.0, 1372 / 3895, 0.66, 1.65, cores_used=8.7, usd_per_hour=4.0),
        Row("dali", 3700.0, 3700 / 3895, 0.02, 0.012, cores_used=3.0, usd_per_hour=4.0),
        Row("tfdata-service", None, error="no batch arrived from the tf.data service"),
    ]
    rows[1].samples_per_dollar = 1372.0 * 3600 / 4.0
    rows[2].samples_per_dollar = 3700.0 * 3600 / 4.0
    need = preprocessing_cores(rows)
    assert need == pytest.approx((8.7 - 1.0) / 1372.0 * 3895.0)  # about 21.9 cores per GPU
    words = verdict(rows, host_cores=16)
    assert words[0] == (
        "this preprocessing needs about 21.9 cores per GPU at the synthetic rate (3,895 images/s per GPU); "
        "this host has 16: too few: offload it (tfdata-service) or decode on the GPU (dali)"
    )
    assert "dataloader reaches 35% of the ceiling (1,372 images/s, None)" in words
    assert "dali reaches 95% of the ceiling (3,700 images/s, None)" in words
    assert "tfdata-service was not measured: no batch arrived from the tf.data service" in words
    assert "cheapest per image with real JPEGs: dali (3,330,000 images/$)" in words
    assert words[-1].startswith("not decisive: the 95% CI of dataloader (±165%) is wider than ±5%")


def test_the_service_instances_are_priced_from_the_table() -> None:
    """Seed 001's cluster: two ml.c5.18xlarge at $3.672/h each beside the p4d (suite/data/prices.yaml)."""
    assert Pricing(service_instance_type="ml.c5.18xlarge", service_instances=2).service_price() == pytest.approx(7.344)
    assert Pricing(service_usd_per_hour=0.5, service_instances=3).service_price() == pytest.approx(1.5)
    assert Pricing().service_price() is None
