"""A real Slurm cluster for the tests: the demo cluster of ``make slurm-up``, started once per session.

The tests submit from this host, as a user does: the host's Slurm client and munged,
the cluster's copy of slurm.conf. The cluster gets its own name (so a user's
``make slurm-up`` cluster is left alone) and its own shared directory (a session
temporary directory, mounted at the same path on every node).

Without a Docker engine, the workload image ``trainbench-gpu`` or the host's Slurm
client and munge, the tests that need the cluster are skipped with the reason;
``.ci/run`` sets ``TRAINBENCH_REQUIRE_DOCKER=1``, which turns a skip into a failure.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from suite.slurm.cluster import Cluster

REQUIRED = os.environ.get("TRAINBENCH_REQUIRE_DOCKER") == "1"

TINY = [
    "batch_size=2",
    "image_size=64",
    "precision=fp32",
    "channels_last=false",
    "warmup_steps=1",
    "warmup_seconds=0",
    "measure_steps=3",
    "measure_seconds=0",
    "repeats=1",
    "sampler_interval_s=0.2",
    "nproc_per_node=1",
]
"""A real fp32 ResNet-50 rank at batch 2 and 64x64 images, one rank per node (``--set`` values)."""


def _skip_or_fail(reason: str) -> None:
    if REQUIRED:
        pytest.fail(f"{reason} (TRAINBENCH_REQUIRE_DOCKER=1: CI must run the Slurm tests)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A 2-node demo cluster (controller + n1, n2) that shares a session directory; removed at the end."""
    from suite.containers.engine import connect
    from suite.containers.errors import EngineUnavailableError
    from suite.slurm import cluster as demo

    try:
        engine = connect(timeout_s=10)
    except EngineUnavailableError as exc:
        _skip_or_fail(f"no Docker engine: {exc}")
    if not engine.images.list(name="trainbench-gpu"):
        _skip_or_fail("image trainbench-gpu is not built here; run `make images` to run the Slurm tests")
    missing = [t for t in ("sbatch", "scontrol", "scancel", "sinfo") if shutil.which(t) is None]
    if missing or not (shutil.which("munged") or Path("/usr/sbin/munged").exists()):
        _skip_or_fail(
            f"the host needs the Slurm client and munge to submit ({missing or 'munged'} missing): "
            "apt-get install slurm-client munge"
        )
    name = f"tb-slurm-test-{uuid.uuid4().hex[:6]}"
    shared = tmp_path_factory.mktemp("slurm-shared")
    cluster = demo.up(name, nodes=2, shared=[shared], log=lambda line: print(line))
    try:
        yield cluster
    finally:
        demo.down(name, log=lambda line: print(line))


@pytest.fixture
def run_dir(slurm_cluster: Cluster) -> Path:
    """A fresh run directory on the cluster's shared filesystem."""
    path = Path(slurm_cluster.shared[0]) / f"run-{uuid.uuid4().hex[:8]}"
    path.mkdir()
    return path
