"""The comparison's statistics on chosen inputs: equal sides, a clear 2x, 5% apart with ±2% runs, too few steps,
incomparable results."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from suite.compare import CompareError, Side, compare, load_side
from suite.compare.stats import SideError, log_ratio_interval, ratio_interval, windows
from suite.results import Result
from tests.compare import synth


def _sides(tmp_path: Path, a: Result, b: Result) -> tuple[Side, Side]:
    pa, pb = synth.write(a, tmp_path / "a"), synth.write(b, tmp_path / "b")
    return load_side(str(pa), "A", None, tmp_path), load_side(str(pb), "B", None, tmp_path)


def test_identical_inputs_give_ratio_one_and_no_significance(tmp_path: Path) -> None:
    times = [synth.jittered(0.5, 6, seed) for seed in range(3)]
    a, b = synth.result(times), synth.result(times)
    c = compare(*_sides(tmp_path, a, b))
    e = c.estimate
    assert e.method == "delta-log" and e.ratio == pytest.approx(1.0, abs=1e-12)
    assert e.low is not None and e.high is not None and e.low < 1.0 < e.high
    assert e.significant is False and c.comparable and c.knobs == []


def test_a_clear_2x_is_significant_both_ways(tmp_path: Path) -> None:
    slow = synth.result([synth.jittered(1.0, 6, s) for s in range(3)])
    fast = synth.result([synth.jittered(0.5, 6, s + 10) for s in range(3)])
    faster = compare(*_sides(tmp_path / "1", slow, fast), fail_above_pct=5)
    assert faster.estimate.ratio == pytest.approx(2.0, rel=0.05)
    assert faster.estimate.significant is True and faster.estimate.low is not None and faster.estimate.low > 1.5
    assert faster.regression is False
    slower = compare(*_sides(tmp_path / "2", fast, slow), fail_above_pct=5)
    assert slower.estimate.ratio == pytest.approx(0.5, rel=0.05) and slower.slowdown_pct == pytest.approx(50, abs=3)
    assert slower.regression is True
    assert compare(*_sides(tmp_path / "3", fast, slow), fail_above_pct=60).regression is False  # slower, but by < 60%


def test_one_repeat_each_uses_the_batch_means_of_the_runs_own_intervals(tmp_path: Path) -> None:
    times = [synth.jittered(0.5, 12, 1)]
    same = compare(*_sides(tmp_path / "1", synth.result(times), synth.result(times)))
    assert same.estimate.method == "delta-log" and "batch means, 6 batches of 2 steps" in same.estimate.description
    assert same.estimate.units_a == 6 and same.estimate.ratio == pytest.approx(1.0)
    assert same.estimate.low is not None and same.estimate.high is not None
    assert same.estimate.low <= 1.0 <= same.estimate.high and same.estimate.significant is False
    double = compare(*_sides(tmp_path / "2", synth.result(times), synth.result([[t / 2 for t in times[0]]])))
    assert double.estimate.ratio == pytest.approx(2.0) and double.estimate.significant is True
    again = compare(*_sides(tmp_path / "3", synth.result(times), synth.result([[t / 2 for t in times[0]]])))
    assert (again.estimate.low, again.estimate.high) == (double.estimate.low, double.estimate.high)  # deterministic


def _steady(step_s: float, seed: int) -> Result:
    """Two repeats of 20 steps, each step ±3% around its repeat's level, the second repeat 4% slower than the
    first (a machine's drift between windows): a steady run whose own 95% CI is about ±1.5%."""
    return synth.result([synth.jittered(step_s, 20, seed), synth.jittered(step_s * 1.04, 20, seed + 1)])


def test_two_steady_runs_5_percent_apart_with_2_percent_intervals_are_called_different(tmp_path: Path) -> None:
    """Issue 37: the ratio uses the runs' own batch means, not Welch's t over 2 + 2 repeat windows (df 1)."""
    a, b = _steady(0.5, 1), _steady(0.5 / 1.05, 11)
    for r in (a, b):  # each run's own interval is within ±2%
        assert r.summary is not None and r.summary.throughput_ci95_rel is not None
        assert 0.01 < r.summary.throughput_ci95_rel <= 0.02
    e = compare(*_sides(tmp_path, a, b)).estimate
    assert e.ratio == pytest.approx(1.05, rel=0.01) and e.method == "delta-log"
    assert e.significant is True and e.low is not None and e.low > 1.0
    assert e.units_a == e.units_b == 10 and e.df is not None and e.df > 10
    assert "delta method on the log scale" in e.description and "batch means over 2 windows" in e.description
    # the same pair with Welch's t over the repeat windows could not tell them apart
    from scipy import stats as sps

    x = [math.log(t) for t in a.summary.repeat_throughputs]  # type: ignore[union-attr]
    y = [math.log(t) for t in b.summary.repeat_throughputs]  # type: ignore[union-attr]
    assert sps.ttest_ind(y, x, equal_var=False).pvalue > 0.05


def test_too_few_repeats_and_steps_say_so_and_decide_nothing(tmp_path: Path) -> None:
    a, b = synth.result([[0.5, 0.52, 0.49]]), synth.result([[0.25, 0.26, 0.24]])
    c = compare(*_sides(tmp_path, a, b), fail_above_pct=1)
    assert c.estimate.method == "none" and c.estimate.low is None and c.estimate.significant is None
    assert "no interval" in c.estimate.description and "repeats=3" in c.estimate.description
    assert "too few measured steps to bound (3 in 1 window(s)" in c.estimate.description
    assert c.estimate.ratio == pytest.approx(2.0, rel=0.05)  # the point estimate is still given
    assert c.regression is None


def test_bf16_emulated_against_native_is_labelled_incomparable(tmp_path: Path) -> None:
    times = [synth.jittered(0.5, 6, s) for s in range(2)]
    native = synth.result(times, overrides=("precision=bf16",), flags=synth.ZEN4_FLAGS)
    emulated = synth.result(times, overrides=("precision=bf16",), flags=synth.ZEN1_FLAGS)
    c = compare(*_sides(tmp_path / "1", native, emulated), fail_above_pct=5)
    assert not c.comparable and c.reasons == ["bf16 is emulated on B's CPU and native on the other's"]
    assert c.regression is None
    flagged = synth.result(times, overrides=("precision=bf16",), workload_info={"bf16_emulated": True})
    assert not compare(*_sides(tmp_path / "2", native, flagged)).comparable  # the recorded flag wins over the CPU flags
    fp32 = synth.result(times, overrides=("precision=fp32",), flags=synth.ZEN1_FLAGS)
    assert compare(*_sides(tmp_path / "3", fp32, emulated)).comparable  # fp32 vs emulated bf16 on one CPU is a question


def test_knob_diff_lists_every_setting_that_differs(tmp_path: Path) -> None:
    times = [synth.jittered(0.5, 6, s) for s in range(2)]
    a = synth.result(times, overrides=("channels_last=true",), system="box-a")
    b = synth.result(times, overrides=("channels_last=false", "allocator=jemalloc"), batch=4, system="box-b")
    c = compare(*_sides(tmp_path, a, b))
    diff = {k.key: (k.a, k.b) for k in c.knobs}
    assert diff["params.batch_size"] == ("2", "4") and diff["params.channels_last"] == ("true", "false")
    assert diff["launch.allocator"] == ("default", "jemalloc") and diff["system"] == ("box-a", "box-b")
    assert any("different systems" in n for n in c.notes)


def test_a_directory_pools_the_repeats_of_one_config_and_refuses_two(tmp_path: Path) -> None:
    one = [synth.jittered(0.5, 6, s) for s in range(2)]
    synth.write(synth.result(one), tmp_path / "runs" / "r1")
    synth.write(synth.result(one), tmp_path / "runs" / "r2")
    side = load_side(str(tmp_path / "runs"), "A", None, tmp_path)
    assert len(side.results) == 2 and len(windows(side.results)) == 4
    synth.write(synth.result(one, batch=4), tmp_path / "runs" / "r3")
    with pytest.raises(CompareError, match="2 different configs"):
        load_side(str(tmp_path / "runs"), "A", None, tmp_path)


def test_ratio_interval_of_windows_matches_the_suites_throughput(tmp_path: Path) -> None:
    a = synth.result([[0.5] * 6])
    b = synth.result([[0.25] * 3 + [0.5] * 3])
    e = ratio_interval([a], [b])
    assert a.summary is not None and b.summary is not None
    assert e.ratio == pytest.approx(b.summary.throughput / a.summary.throughput)


@settings(max_examples=60, deadline=None)
@given(
    st.floats(0.01, 100),
    st.floats(0, 0.5),
    st.integers(2, 40),
    st.floats(0, 0.5),
    st.integers(2, 40),
)
def test_the_interval_is_bounded_and_reciprocal(ratio: float, se_a: float, n_a: int, se_b: float, n_b: int) -> None:
    a, b = SideError(se_a, n_a, "a"), SideError(se_b, n_b, "b")
    ab, ba = log_ratio_interval(ratio, a, b), log_ratio_interval(1 / ratio, b, a)
    assert ab.low is not None and ab.high is not None and ba.low is not None and ba.high is not None
    assert 0 < ab.low <= ab.ratio <= ab.high < math.inf
    assert ab.low == pytest.approx(1 / ba.high) and ab.high == pytest.approx(1 / ba.low)


def test_the_delta_method_refuses_what_it_cannot_bound() -> None:
    with pytest.raises(ValueError, match="at least 2 units"):
        log_ratio_interval(1.0, SideError(0.01, 1, "a"), SideError(0.01, 5, "b"))
    with pytest.raises(ValueError, match="positive"):
        log_ratio_interval(0.0, SideError(0.01, 5, "a"), SideError(0.01, 5, "b"))
