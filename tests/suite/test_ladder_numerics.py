"""The ladder's judgement on chosen inputs: each rung's loss trajectory against fp32's, the best among valid
rungs only, and how far a later run is from the ladder's best on the same device."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from suite.ladder.best import distance_to_best
from suite.ladder.numerics import TOLERANCE, check, deviation
from suite.ladder.outcome import RungOutcome, best_rung, check_numerics
from suite.ladder.rungs import RungPlan
from suite.results import Result
from suite.run.config_file import LadderBest, RunConfigFile, write_config_file
from tests.compare import synth

FP32 = [6.9, 6.1, 5.2, 4.4, 3.9, 3.1, 2.6, 2.0]


def _result(step_s: float, losses: Sequence[float | None] | None, **extra: object) -> Result:
    """A steady run of ``step_s`` seconds per step whose loss trajectory is ``losses`` (None: no trajectory)."""
    info: dict[str, object] = {}
    if losses is not None:
        trajectory = {"losses": list(losses), "steps": len(losses), "distinct_samples": 2, "seed": 0}
        info["loss_trajectory"] = trajectory | extra
    return synth.result([synth.jittered(step_s, 12, 1), synth.jittered(step_s, 12, 2)], workload_info=info)


def test_deviation_is_the_mean_absolute_difference_over_the_first_loss() -> None:
    assert deviation([2.0, 1.0], [2.5, 0.5]) == pytest.approx((0.5 + 0.5) / 2 / 2.0)
    with pytest.raises(ValueError, match="cannot be compared"):
        deviation([2.0], [2.0, 1.0])


def test_a_rung_is_valid_within_the_tolerance_and_invalid_outside_or_without_a_trajectory() -> None:
    ref = _result(0.5, FP32)
    assert check(ref, ref, True).status == "reference"
    close = [v * 1.02 for v in FP32]  # bf16-like: 2% off
    ok = check(ref, _result(0.3, close), False)
    assert ok.status == "ok" and ok.valid and ok.deviation == pytest.approx(deviation(FP32, close))
    broken = [FP32[0], *(v * 0.5 for v in FP32[1:])]  # an lr bug: the loss falls twice as fast
    bad = check(ref, _result(0.2, broken), False)
    assert bad.status == "invalid" and not bad.valid and bad.deviation is not None and bad.deviation > TOLERANCE
    assert "does not train the same model" in str(bad.reason)
    assert "NaN or infinite" in str(check(ref, _result(0.2, [*FP32[:-1], None]), False).reason)
    assert "recorded no loss trajectory" in str(check(ref, _result(0.2, None), False).reason)
    failed = _result(0.2, FP32, error="RuntimeError: boom")
    assert "loss-trajectory pass failed: RuntimeError: boom" in str(check(ref, failed, False).reason)
    other = check(ref, _result(0.2, FP32, seed=1), False)
    assert other.status == "invalid" and "seed 1 vs fp32's 0" in str(other.reason)
    orphan = check(_result(0.5, None), _result(0.2, FP32), False)
    assert orphan.status == "invalid" and "no fp32 trajectory to compare with" in str(orphan.reason)


def test_an_invalid_rung_is_never_the_best_however_fast() -> None:
    def rung(name: str, step_s: float, losses: Sequence[float | None]) -> RungOutcome:
        return RungOutcome(RungPlan(name, name), result=_result(step_s, losses))

    rungs = [rung("fp32", 0.5, FP32), rung("bf16", 0.3, [v * 1.01 for v in FP32]), rung("broken", 0.1, [9.0] * 8)]
    check_numerics(rungs)
    assert [r.numerics.status for r in rungs if r.numerics] == ["reference", "ok", "invalid"]
    assert best_rung(rungs) == 1  # bf16: the fastest valid rung, though "broken" is 3x faster
    rungs[0].result = _result(0.5, None)  # no fp32 trajectory: nothing can be shown to train the same model
    check_numerics(rungs)
    assert best_rung(rungs) is None


def test_a_run_is_told_how_far_it_is_from_the_ladders_best_on_its_device(tmp_path: Path) -> None:
    best, slower = _result(0.4, FP32), _result(0.5, None)
    ladder = tmp_path / "resnet50-cpu" / "ladder-20261127T120000Z-abcdef12"
    result_path = synth.write(best, ladder / "rung")
    assert best.summary is not None and slower.summary is not None
    entry = LadderBest(device="Synthetic EPYC", world_size=1, rung="+ bf16",
                       throughput_samples_per_s=best.summary.throughput, result=str(result_path))  # fmt: skip
    write_config_file(ladder / "best-config.json", RunConfigFile(workload="resnet50-cpu", best=entry))
    d = distance_to_best(slower, tmp_path)
    assert d is not None and d.ratio == pytest.approx(0.8, rel=0.02) and d.rung == "+ bf16"
    assert d.low is not None and d.high is not None and d.high < 1.0  # significantly slower than the best
    text = d.text()
    assert "ladder's best on Synthetic EPYC (1 rank)" in text and "slower" in text and "--config" in text
    elsewhere = synth.result([synth.jittered(0.5, 12, 1)], environment={"cpu": {"model": "Other CPU"}})
    assert distance_to_best(elsewhere, tmp_path) is None  # a best on another device is never held against a run
    (ladder / "rung" / "result.json").unlink()  # the best's result is gone: the ratio without an interval
    gone = distance_to_best(slower, tmp_path)
    assert gone is not None and gone.low is None and gone.ratio == pytest.approx(0.8, rel=0.02)
