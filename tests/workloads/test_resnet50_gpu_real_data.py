"""A generated ImageNet-like set feeds each real-data pipeline of resnet50-gpu-horovod through
``trainbench run`` on CPU (DDP over gloo, one rank), and every result passes the validator's
checks of a result (``trainbench validate``'s; a score would also need 5 runs). DALI runs on
its CPU backend where it is installed."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from suite.datasets.image_sets import MakeSettings, make_imagenet_like
from suite.results import read_result
from tests.conftest import TINY_GPU_WORKLOAD_ON_CPU, trainbench
from tests.slurm.validate import validator_errors

RUN = [*TINY_GPU_WORKLOAD_ON_CPU]
"""One rank, 32 px, batch 4: a real ResNet-50 step on real JPEGs in about a second here."""
HAVE_DALI = importlib.util.find_spec("nvidia") is not None and importlib.util.find_spec("nvidia.dali") is not None


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``trainbench data make-imagenet-like``'s set: 3 classes x 8 JPEGs of about 64 x 48 px."""
    root = tmp_path_factory.mktemp("data") / "set"
    make_imagenet_like(root, MakeSettings(classes=3, images_per_class=8, seed=2, long_side=64))
    return root


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A tf.data service on this machine: a dispatcher and one worker, as ``trainbench data-service`` starts them."""
    pytest.importorskip("tensorflow")
    from suite.datasets.service import LocalService

    with LocalService([None], tmp_path_factory.mktemp("service-logs")) as s:
        yield s.address


def _run(tmp_path: Path, *settings: str) -> subprocess.CompletedProcess[str]:
    args = [a for s in (*RUN, *settings) for a in ("--set", s)]
    out = tmp_path / "o"
    return trainbench(
        "run", "resnet50-gpu-horovod", *args, "--output-dir", str(out), "--no-tracking", cwd=tmp_path, timeout=600
    )


def _validated(tmp_path: Path, pipeline: str) -> dict[str, object]:
    [path] = list((tmp_path / "o").rglob("result.json"))
    r = read_result(path)
    assert r.status == "complete" and r.summary is not None and r.summary.throughput > 0
    assert r.config.params["input_pipeline"] == pipeline and r.config.params["data"] == "imagefolder"
    assert r.workload_info["input_pipeline"] == pipeline and r.workload_info["dataset_samples"] == 24
    assert validator_errors(json.loads(path.read_text())) == []
    prep = r.workload_info["preprocessing"]
    assert isinstance(prep, dict) and prep["classes"] == 3
    return prep


def test_the_dataloader_pipeline(tmp_path: Path, generated: Path) -> None:
    proc = _run(tmp_path, "input_pipeline=dataloader", f"data_dir={generated}", "num_workers=1", "prefetch=2")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    prep = _validated(tmp_path, "dataloader")
    assert prep["engine"] == "torch DataLoader" and prep["workers"] == 1 and prep["prefetch_per_worker"] == 2
    printed = " ".join(proc.stdout.split())
    assert "torch DataLoader: DataLoader worker processes" in printed
    [path] = list((tmp_path / "o").rglob("result.json"))
    s = read_result(path).summary
    assert s is not None
    wide = s.throughput_ci95_rel is None or s.throughput_ci95_rel > 0.05  # 4 steps of a shared CPU: usually wide
    assert ("not decisive (" in printed) == wide, "a CI wider than +-5% says why and what to change"


def test_the_tf_data_service_pipeline(tmp_path: Path, generated: Path, service: str) -> None:
    proc = _run(tmp_path, "input_pipeline=tfdata-service", f"data_dir={generated}", f"data_service={service}")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    prep = _validated(tmp_path, "tfdata-service")
    assert prep["engine"] == "tf.data service" and prep["placement"] == "remote (loopback)"
    assert prep["workers"] == 1 and prep["dispatcher"] == service


@pytest.mark.skipif(not HAVE_DALI, reason="DALI is not installed (make venv-dali, or pip install -e '.[dali]')")
def test_dalis_cpu_backend(tmp_path: Path, generated: Path) -> None:
    proc = _run(tmp_path, "input_pipeline=dali", f"data_dir={generated}", "num_workers=1")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    prep = _validated(tmp_path, "dali")
    assert str(prep["engine"]).startswith("NVIDIA DALI") and prep["decoder"] == "cpu"


def test_a_loader_that_would_not_fit_is_refused_with_the_fix(tmp_path: Path, generated: Path) -> None:
    """20,000 images of 1024 px per batch (63 GB of uint8): the rank refuses before a worker starts (its exit 2,
    no traceback), and the run fails with that message, its incomplete result kept."""
    proc = _run(tmp_path, "input_pipeline=dataloader", f"data_dir={generated}", "batch_size=20000", "image_size=1024")
    assert proc.returncode == 1, proc.stderr + proc.stdout
    assert "the DataLoader would hold about" in proc.stderr
    assert "lower num_workers, prefetch or batch_size" in proc.stderr
    assert "Traceback" not in proc.stderr
    [log] = list((tmp_path / "o").rglob("rank0.log"))
    assert log.read_text().startswith("rank 0: the DataLoader would hold about")  # (then torchrun's own report)
    [kept] = list((tmp_path / "o").rglob("result-incomplete.json"))
    assert "the DataLoader would hold about" in str(read_result(kept).error)
