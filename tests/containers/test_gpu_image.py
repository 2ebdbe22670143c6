"""The GPU image on a CPU-only engine: Horovod's build (PyTorch, NCCL, Gloo) and a 2-rank Gloo training run."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from suite.containers.images import LABEL_LOCK, get_image, lock_digest
from tests.conftest import REPO

HERE = Path(__file__).resolve().parent


def test_horovod_check_build_lists_pytorch_nccl_and_gloo(engine: Any, gpu_image: Any) -> None:
    out = engine.containers.run(gpu_image.id, ["--check-build"], entrypoint="horovodrun", remove=True).decode()
    checked = {m.group(2).strip() for m in re.finditer(r"\[(X)\]\s+([A-Za-z ]+)", out)}
    assert {"PyTorch", "NCCL", "Gloo"} <= checked, out
    assert "[ ] TensorFlow" in out and "[ ] MPI" in out
    assert gpu_image.labels[LABEL_LOCK] == lock_digest(get_image("trainbench-gpu"), REPO)
    assert gpu_image.labels["org.opencontainers.image.title"] == "trainbench-gpu"


def test_gpu_image_has_a_cuda_toolkit_and_stays_non_root(engine: Any, gpu_image: Any) -> None:
    script = (
        "id -u && nvcc --version && test -f $CUDA_HOME/include/cuda_runtime.h"
        " && python -c 'import horovod; print(horovod.__version__)'"
    )
    out = engine.containers.run(gpu_image.id, ["-c", script], entrypoint="sh", remove=True).decode()
    assert out.split()[0] != "0"
    assert "Cuda compilation tools, release 13.0" in out and "0.28.1" in out


def test_two_rank_gloo_training_in_the_gpu_image(engine: Any, gpu_image: Any, tmp_path: Path) -> None:
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    os.chmod(out_dir, 0o777)  # the image's non-root user writes the report
    logs = engine.containers.run(
        gpu_image.id,
        ["--gloo", "-np", "2", "-H", "localhost:2", "python", "/smoke/horovod_smoke.py", "/out/report.json"],
        entrypoint="horovodrun",
        volumes={str(HERE): {"bind": "/smoke", "mode": "ro"}, str(out_dir): {"bind": "/out", "mode": "rw"}},
        network_mode="host",
        shm_size="256m",
        remove=True,
    ).decode()
    report = json.loads((out_dir / "report.json").read_text())
    assert report["size"] == 2 and report["ranks_sum"] == 1.0, logs
    assert report["weights_identical"] and report["gloo_enabled"] and not report["mpi_enabled"]
    assert report["nccl_built"] and report["torch"].startswith("2.14.1")
    assert report["loss_last"] < report["loss_first"]
    assert "rank 1:" in logs and "rank 0:" in logs
