"""The live progress bar: the current window's progress towards both of its minimums."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from suite.run.progress import LiveProgress
from suite.specs import resolve


def _event(phase: str, index: int, compute_s: float) -> dict[str, object]:
    return {"repeat": 0, "phase": phase, "index": index, "samples": 16, "data_wait_s": 0.0, "compute_s": compute_s}


def test_bar_follows_the_lesser_of_steps_and_seconds() -> None:
    config = resolve(
        "resnet50-cpu",
        "quick",
        ["warmup_steps=2", "warmup_seconds=0", "measure_steps=4", "measure_seconds=10", "repeats=1"],
    )
    out = io.StringIO()
    live = LiveProgress(config, Console(file=out, width=160))
    task = live.progress.tasks[0]
    assert task.total is None  # before the first step: no window yet
    live(_event("warmup", 0, 1.0))
    assert task.completed == pytest.approx(0.5)  # 1 of 2 steps, no minimum duration
    for i in range(4):
        live(_event("measurement", i, 1.0))
    assert task.completed == pytest.approx(0.4)  # 4 of 4 steps, but 4 of 10 s
    for i in range(4, 12):
        live(_event("measurement", i, 1.0))
    assert task.completed == pytest.approx(1.0)  # both minimums met
    with live:
        pass
    assert "samples/s" in out.getvalue()
