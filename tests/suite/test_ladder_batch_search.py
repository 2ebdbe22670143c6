"""The batch-size search stops at the first size that runs out of memory: the sizes above it are skipped with that
reason, the size that did not fit is not a failure, and the best is found among the sizes that fit.

The runs are stood in for by sealed results (tests/compare/synth.py) and, for the sizes that do not fit, by the
error a rank reports when CUDA runs out of memory: a GPU's memory is what this test is about, and there is none
here (the real runs of the ladder are in test_gpu_ladder_cli.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from suite.ladder import runner
from suite.ladder.gpu_rungs import GPU
from suite.ladder.rungs import parse_rungs
from suite.run.options import RunError, RunOptions
from tests.compare import synth
from tests.suite.test_gpu_ladder_plan import H100

LOSSES = [6.9, 5.1, 3.2, 2.0]
OOM = "rank 0 failed: out of memory: OutOfMemoryError: CUDA out of memory. Tried to allocate 3.06 GiB"


def test_the_search_stops_at_the_first_size_that_does_not_fit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[int] = []

    def execute(config: Any, opts: RunOptions, on_progress: Any = None) -> SimpleNamespace:
        batch = int(config.params["batch_size"])
        ran.append(batch)
        if batch >= 1024:
            raise RunError(f"run failed: {OOM}. The 0 steps measured are kept", result_path=None)
        step_s = 0.5 * batch / 256 * (0.9 if batch == 512 else 1.0)  # 512 is 10% faster per sample
        trajectory = {"losses": LOSSES, "steps": 4, "distinct_samples": 128, "seed": 0}
        result = synth.result([synth.jittered(step_s, 12, s) for s in (1, 2)], batch=batch,
                              workload_info={"loss_trajectory": trajectory})  # fmt: skip
        path = synth.write(result, tmp_path / f"b{batch}-{len(ran)}")
        return SimpleNamespace(result=result, result_path=path, tracking_error=None)

    monkeypatch.setattr(runner, "execute", execute)
    out = runner.run_ladder(
        "resnet50-gpu-horovod", None, ["engine=ddp"], parse_rungs("fp32,fused,batch", GPU),
        RunOptions(output_dir=tmp_path / "o", tracking_uri=None), H100, trajectory_steps=4,
    )  # fmt: skip
    assert ran == [256, 256, 128, 512, 1024]  # fp32, fused, then the search up to the first that does not fit
    rows = {r.plan.name: r for r in out.rungs}
    assert rows["batch-1024"].over_limit and not rows["batch-1024"].complete
    for size in (2048, 4096):
        assert rows[f"batch-{size}"].plan.skip == "batch 1024 did not fit in memory, so larger ones are not tried"
    assert out.failed == [] and not out.interrupted
    assert out.best is not None and out.rungs[out.best].plan.name == "batch-512"
    assert out.json_path is not None
    doc = {r["rung"]: r for r in json.loads(out.json_path.read_text())["rungs"]}
    assert doc["batch-1024"]["status"] == "did not fit" and "CUDA out of memory" in doc["batch-1024"]["why"]
    assert doc["batch-2048"]["status"] == "skipped"
