"""A rung whose numerics are broken on purpose is refused: a real tiny CPU ladder in which the channels_last
rung also multiplies the learning rate by 10 (an injected bug, as a rung that changed the optimizer would be).

Its runs are real (resnet50-cpu, batch 8 at 32 x 32, through the real run path), and faster than fp32 or not,
the broken rung's loss trajectory leaves the tolerance: it is marked invalid, named so in ladder.json, and
never the best config.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from suite.ladder.cpu_rungs import CPU
from suite.ladder.numerics import TOLERANCE
from suite.ladder.rungs import this_host
from suite.ladder.runner import run_ladder
from suite.run.config_file import read_config_file
from suite.run.options import RunOptions

TINY = ["batch_size=8", "image_size=32", "warmup_steps=1", "measure_steps=4", "repeats=2", "sampler_interval_s=0.2"]


def test_a_rung_that_trains_another_model_is_invalid_and_never_the_best(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lr = 10 * 1e-3  # ten times resnet50-cpu's learning rate: its trajectory deviated by >= 0.33 in the measurements
    monkeypatch.setitem(CPU.adds, "channels_last", lambda ctx: (["channels_last=true", f"lr={lr}"], None))  # type: ignore[index]
    out = run_ladder(
        "resnet50-cpu", None, TINY, ["fp32", "channels_last", "allocator"],
        RunOptions(output_dir=tmp_path, tracking_uri=None), this_host(),
    )  # fmt: skip
    rungs = {r.plan.name: r for r in out.rungs}
    broken = rungs["channels_last"]
    assert broken.complete and broken.result is not None and broken.result.config.params["lr"] == lr
    assert broken.numerics is not None and broken.numerics.status == "invalid"
    assert broken.numerics.deviation is not None and broken.numerics.deviation > TOLERANCE
    assert "does not train the same model" in str(broken.numerics.reason)
    assert out.best is not None and out.rungs[out.best].plan.name != "channels_last"
    base = rungs["fp32"]
    assert base.numerics is not None and base.numerics.status == "reference"
    assert out.json_path is not None and out.config_path is not None
    row = {r["rung"]: r for r in json.loads(out.json_path.read_text())["rungs"]}["channels_last"]
    assert row["status"] == "complete" and row["numerics"]["valid"] is False and "tolerance" in row["why"]
    assert f"lr={lr}" not in read_config_file(out.config_path).overrides
    allocator = rungs["allocator"]
    if allocator.plan.skip is None:  # built on the broken rung, it inherits the bug: invalid too
        assert allocator.numerics is not None and not allocator.numerics.valid
