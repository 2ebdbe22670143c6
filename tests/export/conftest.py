"""One real tiny ResNet-50 run with an evaluation pass, shared by the export tests.

The run goes through the installed ``trainbench`` CLI as a user's would: fp32, batch 2,
64x64 images, one warm-up and three measured steps, then an evaluation pass on 4
synthetic samples (``--set eval_samples=4``), outside every timed window.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import TINY_RUN, trainbench

SYSTEM = "test-box"
SUBMITTER = "acme"
EVAL_SAMPLES = 4


@pytest.fixture(scope="session")
def evaluated_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The result file of a real tiny run with ``eval_samples=4`` (recorded on system ``test-box``)."""
    work = tmp_path_factory.mktemp("mlperf-run")
    out = work / "results"
    args = [*TINY_RUN, "--set", "precision=fp32", "--set", "channels_last=false", "--set", "num_classes=10"]
    args += ["--set", f"eval_samples={EVAL_SAMPLES}"]
    proc = trainbench(
        "run", "resnet50-cpu", *args, "--system", SYSTEM, "--output-dir", str(out), "--no-tracking", cwd=work
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (path,) = out.glob("resnet50-cpu/*/result.json")
    return path
