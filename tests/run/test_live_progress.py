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


def _live(overrides: list[str] | None = None) -> tuple[LiveProgress, io.StringIO]:
    out = io.StringIO()
    config = resolve("resnet50-cpu", "quick", overrides or [])
    return LiveProgress(config, Console(file=out, width=400)), out


def test_header_and_the_rank_decision_are_printed_before_the_first_step() -> None:
    from harness.isa import detect_isa
    from harness.precision import choose_precision
    from suite.run.header import planned_header

    live, out = _live(["precision=bf16"])
    env = {"ONEDNN_MAX_CPU_ISA": "AVX2"}  # on any x86 machine this leaves bf16 emulated
    header = planned_header(live.config, env)
    live(header)
    text = out.getvalue()
    assert "CPU: " in text and "logical cores" in text and "torch " in text
    if header["isa"]["arch"] == "x86_64":
        assert "matrix ISA: AVX2" in text and "bf16 emulated" in text
        assert "precision: bf16 (requested bf16)" in text and "EMULATED" in text
    isa = detect_isa("flags\t: avx2 avx512f avx512_bf16", "x86_64", env)
    choice = choose_precision("bf16", isa)
    live({"event": "precision", "rank": 0, **choice.to_dict()})
    assert "warning: precision=bf16 without native bf16" in out.getvalue()
    assert "Fix: --set precision=auto" in out.getvalue()
    live({"event": "unknown-kind", "rank": 0})  # ignored
    assert live.progress.tasks[0].total is None  # still before the first step


def test_an_overshooting_projection_prints_cause_and_fix_and_the_bar_follows_calibration() -> None:
    live, out = _live()
    assert live.need["measurement"] == (15, 0.0)
    first = {"event": "projection", "stage": "first_step", "over_budget_s": 120.0, "floor_overshoots": False}
    first |= {"explain": "projected 4.5 min: a step takes 8.50 s, ...", "cause": "a step takes 8.5 s at batch 16"}
    first |= {"fix": "the measurement windows are shortened", "measure_steps": 15, "shortened": False}
    live(first)
    calibrated = {**first, "stage": "calibrated", "over_budget_s": 0.0, "measure_steps": 6, "shortened": True}
    live(calibrated | {"explain": "projected 2.4 min: a step takes 8.40 s, ..."})
    live(calibrated | {"explain": "projected 2.4 min: a step takes 8.40 s, ..."})  # the same again: said once
    text = out.getvalue()
    assert text.count("time budget:") == 2 and "cause: a step takes 8.5 s at batch 16" in text
    assert live.need["measurement"] == (6, 0.0)
    live(_event("measurement", 2, 1.0))
    assert live.progress.tasks[0].completed == pytest.approx(0.5)  # 3 of the calibrated 6 steps
