"""Shared fixtures: small real datasets in standard on-disk formats, and a CLI runner."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

TINY_RUN = [
    "--set",
    "batch_size=2",
    "--set",
    "image_size=64",
    "--set",
    "warmup_steps=1",
    "--set",
    "warmup_seconds=0",
    "--set",
    "measure_steps=3",
    "--set",
    "measure_seconds=0",
    "--set",
    "repeats=1",
    "--set",
    "sampler_interval_s=0.1",
]
"""Overrides that make resnet50-cpu a real but seconds-long run (batch 2, 64x64 images)."""

TINY_GPU_WORKLOAD_ON_CPU = [
    *("engine=ddp", "device=cpu", "nproc_per_node=1", "batch_size=4", "image_size=32", "precision=fp32"),
    *("warmup_steps=1", "warmup_seconds=0", "measure_steps=4", "measure_seconds=0", "repeats=1"),
    "sampler_interval_s=0.1",
]
"""``--set`` values that make resnet50-gpu-horovod a real seconds-long run on the CPU (one rank, batch 4, 32x32
images): the input pipelines' runs on a CPU machine."""


def trainbench(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run the installed ``trainbench`` CLI as a user would, in its own process."""
    full_env = {**os.environ, **(env or {})}
    full_env.pop("MLFLOW_TRACKING_URI", None)
    if env and "MLFLOW_TRACKING_URI" in env:
        full_env["MLFLOW_TRACKING_URI"] = env["MLFLOW_TRACKING_URI"]
    exe = Path(sys.executable).parent / "trainbench"
    return subprocess.run([str(exe), *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
def empty_store_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An MLflow SQLite store with every migration of the installed MLflow applied and nothing logged.

    Made once per test session, by MLflow itself (its client creates the tables and the Default
    experiment on first use, as on a user's first run).
    """
    from mlflow.tracking import MlflowClient

    path = tmp_path_factory.mktemp("mlflow-template") / "empty.db"
    MlflowClient(tracking_uri=f"sqlite:///{path}").search_experiments()
    return path


def copy_empty_store(template: Path, path: Path) -> str:
    """Copy the session's empty store (:func:`empty_store_template`) to ``path``; return its ``sqlite:///`` URI.

    A new store costs MLflow's Alembic migrations: the first use of a new store took 1.5 s where that of an
    existing one took 0.55 s (one process each, after importing MLflow; 2-vCPU Xeon, 2026-11-27). Tests
    that are not about a store's creation start from this copy. First use is still tested where it happens to a user:
    ``tests/suite/test_cli_run.py`` (a first run creates ``--tracking-uri``'s store), ``tests/tracking``
    (the default ``mlflow.db``), ``tests/faults/test_security_defaults.py`` (``make ui`` on a new store).
    """
    shutil.copyfile(template, path)
    return f"sqlite:///{path}"


@pytest.fixture
def store_uri(tmp_path: Path, empty_store_template: Path) -> str:
    """``sqlite:///`` URI of ``tmp_path / "store.db"``, a copy of the session's empty, migrated store."""
    return copy_empty_store(empty_store_template, tmp_path / "store.db")


@pytest.fixture
def jpeg_folder(tmp_path: Path) -> Path:
    """An ImageFolder tree of real JPEG files: 3 classes x 4 images of 80x60 pixels."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    root = tmp_path / "images"
    for cls in ("cat", "dog", "fox"):
        (root / cls).mkdir(parents=True)
        for i in range(4):
            pixels = rng.integers(0, 256, size=(60, 80, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(root / cls / f"{i}.jpg", format="JPEG", quality=85)
    return root


def pytest_configure(config: pytest.Config) -> None:
    """Let the runs the tests start receive SIGINT even when the test session itself ignores it.

    A shell without job control starts background commands (``make test &``, ``nohup``)
    with SIGINT ignored, and children inherit an ignored signal across exec, so the
    tests that interrupt a run with SIGINT would wait for a run that never hears it.
    A handler (unlike SIG_IGN) is reset to the default action in a child.
    """
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


DOCKER_FIXTURES = frozenset({"engine", "slurm_cluster"})
"""Fixtures that need a Docker engine (the images' fixtures and the demo cluster build on them): a test
using one is marked ``docker``, so ``.ci/run`` can run the other tests while the images build."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip tests marked ``gpu`` when no CUDA device is visible (they run on GPU hosts), and
    tests marked ``numactl`` when numactl is not installed, unless ``TRAINBENCH_REQUIRE_NUMACTL=1``
    (``.ci/run`` sets it, so in CI a missing numactl fails them instead); mark ``docker`` the tests
    that use :data:`DOCKER_FIXTURES`."""
    if shutil.which("numactl") is None and os.environ.get("TRAINBENCH_REQUIRE_NUMACTL") != "1":
        skip_numa = pytest.mark.skip(reason="needs numactl to bind ranks to CPUs (apt-get install numactl)")
        for item in items:
            if item.get_closest_marker("numactl"):
                item.add_marker(skip_numa)
    for item in items:  # what needs the Docker engine, found by its fixtures (``.ci/run`` runs it after the builds)
        callspec = getattr(item, "callspec", None)
        params = set(callspec.params) if callspec is not None else set()  # e.g. a parameter named "engine"
        if DOCKER_FIXTURES & (set(getattr(item, "fixturenames", ())) - params):
            item.add_marker(pytest.mark.docker)
    marked = [item for item in items if item.get_closest_marker("gpu")]
    if not marked:
        return
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU (torch.cuda.is_available() is False)")
    for item in marked:
        item.add_marker(skip)
