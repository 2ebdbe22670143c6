"""Steady-state check (harness.steady) on synthetic step-time series."""

from __future__ import annotations

import numpy as np
import pytest

from harness.steady import (
    CONFIDENCE,
    MIN_STEPS,
    STATUSES,
    THEIL_SEN_CAP,
    check_steady_state,
    subsample_indices,
    verdict,
    window_trend,
)


def flat(n: int = 40, seed: int = 1) -> list[float]:
    rng = np.random.default_rng(seed)
    return list(1.0 + 0.01 * rng.normal(size=n))


def rising(n: int = 40, rise: float = 0.30, seed: int = 2) -> list[float]:
    rng = np.random.default_rng(seed)
    return list(1.0 + rise * np.arange(n) / (n - 1) + 0.01 * rng.normal(size=n))


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_flat_noisy_series_is_steady(seed: int) -> None:
    v = check_steady_state([flat(seed=seed)])
    assert v.status == "steady"
    assert not v.flagged
    assert v.windows_checked == 1
    assert v.worst_drift is not None
    assert abs(v.worst_drift) < 0.05
    assert v.worst_p_value is not None
    assert 0.0 <= v.worst_p_value <= 1.0
    assert (v.max_drift, v.alpha) == (0.10, 0.05)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_rising_series_is_trending(seed: int) -> None:
    v = check_steady_state([rising(seed=seed)])
    assert v.status == "trending"
    assert v.flagged
    assert v.worst_drift is not None
    # +30% over the window, relative to the median (about 1.15): about +0.26
    assert 0.2 < v.worst_drift < 0.32
    assert v.worst_p_value is not None
    assert v.worst_p_value < 1e-6


def test_falling_series_is_trending_with_negative_drift() -> None:
    series = rising()[::-1]
    v = check_steady_state([series])
    assert v.status == "trending"
    assert v.worst_drift is not None
    assert v.worst_drift < -0.2


def test_window_trend_of_exact_line() -> None:
    y = [1.0 + 0.3 * i / 39 for i in range(40)]
    t = window_trend(y)
    assert t.drift == pytest.approx(0.3 / float(np.median(y)))
    # every pairwise slope is the same: the interval collapses onto the estimate
    assert t.drift_low == pytest.approx(t.drift)
    assert t.drift_high == pytest.approx(t.drift)
    assert t.p_value < 1e-10
    assert (t.steps, t.fitted_steps) == (40, 40)


def test_window_trend_of_constant_series() -> None:
    t = window_trend([0.5] * 20)
    assert (t.drift, t.drift_low, t.drift_high, t.p_value) == (0.0, 0.0, 0.0, 1.0)
    assert check_steady_state([[0.5] * 20]).status == "steady"


def test_significant_but_small_drift_is_steady() -> None:
    # a perfect 5% rise is highly significant but below max_drift (10%)
    y = [1.0 + 0.05 * i / 39 for i in range(40)]
    v = check_steady_state([y])
    assert v.status == "steady"
    assert v.worst_p_value is not None
    assert v.worst_p_value < 1e-10
    assert v.worst_drift == pytest.approx(0.05 / float(np.median(y)))
    # the same series is trending once the threshold is lower than its drift
    assert check_steady_state([y], max_drift=0.02).status == "trending"


def test_large_drift_that_is_not_significant_is_never_steady() -> None:
    # the old rule called this "steady": significance was required to flag, none to clear
    v = check_steady_state([rising()], alpha=1e-30)
    assert v.status == "undetermined"
    assert not v.flagged
    assert not v.decided
    assert v.worst_drift is not None
    assert v.worst_drift > 0.2


def noisy_rise(n: int, rise: float, noise: float, seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    return list(1.0 + rise * np.arange(n) / (n - 1) + noise * rng.normal(size=n))


@pytest.mark.parametrize("seed", range(20))
def test_a_43_percent_drift_without_power_is_undetermined_not_steady(seed: int) -> None:
    # the loaded-machine case of issue 13: +43% across a short, very noisy window
    series = noisy_rise(10, 0.43, 0.35, seed)
    v = check_steady_state([series])
    assert v.status in ("undetermined", "trending")
    t = window_trend(series)
    assert verdict(t, 0.10, 0.05) != "steady"
    assert t.drift_high - t.drift_low > 0.2  # far too wide to show anything within +-10%


def test_the_interval_decides_steady() -> None:
    t = window_trend(flat(n=40, seed=1))
    assert -0.10 <= t.drift_low <= t.drift <= t.drift_high <= 0.10
    assert verdict(t, 0.10, 0.05) == "steady"
    # the same window, with a tolerance narrower than its interval, cannot be called steady
    half = (t.drift_high - t.drift_low) / 4
    assert verdict(t, half, 0.05) in ("undetermined", "trending")


def test_one_undetermined_window_makes_the_run_undetermined_and_trending_wins() -> None:
    short_noisy = noisy_rise(8, 0.0, 0.2, seed=3)
    assert verdict(window_trend(short_noisy), 0.10, 0.05) == "undetermined"
    v = check_steady_state([flat(seed=1), short_noisy, flat(seed=2)])
    assert (v.status, v.windows_checked, v.windows_undetermined, v.windows_trending) == ("undetermined", 3, 1, 0)
    w = check_steady_state([flat(seed=1), short_noisy, rising()])
    assert (w.status, w.windows_trending, w.windows_undetermined) == ("trending", 1, 1)
    assert set(STATUSES) == {"steady", "trending", "undetermined", "insufficient"}


def test_explain_names_the_verdict_and_the_fix() -> None:
    assert check_steady_state([flat(seed=1)]).explain().startswith("steady: every window's drift is within ±10%")
    trending = check_steady_state([rising()]).explain()
    assert trending.startswith("still trending in 1 of 1 windows")
    assert "Fix: lengthen the warm-up" in trending
    undetermined = check_steady_state([rising()], alpha=1e-30).explain()
    assert undetermined.startswith("undetermined in 1 of 1 windows (largest drift +")
    assert "90% CI" in undetermined
    assert "Fix: raise measure_steps" in undetermined
    assert "Fix: measure at least 8 steps" in check_steady_state([]).explain()


# --- bounded work -------------------------------------------------------------------------------


def test_subsample_indices_are_even_integer_and_keep_both_ends() -> None:
    assert list(subsample_indices(7, cap=10)) == list(range(7))
    idx = subsample_indices(40_000)
    assert len(idx) == THEIL_SEN_CAP
    assert (idx[0], idx[-1]) == (0, 39_999)
    assert np.all(np.diff(idx) >= 80)  # 39_999 / 499 = 80.2: evenly spaced, strictly increasing
    assert np.all(np.diff(idx) <= 81)
    assert list(subsample_indices(11, cap=4)) == [0, 3, 6, 10]


def test_long_window_uses_the_subsample_and_is_reproducible() -> None:
    series = rising(n=40_000, rise=0.3, seed=5)
    a = window_trend(series)
    b = window_trend(list(series))
    assert a == b  # bit for bit: the validator recomputes this
    assert (a.steps, a.fitted_steps) == (40_000, THEIL_SEN_CAP)
    assert a.drift == pytest.approx(0.3 / float(np.median(series)), rel=0.02)
    assert a.drift_low < a.drift < a.drift_high
    assert check_steady_state([series]).status == "trending"
    assert check_steady_state([flat(n=40_000, seed=6)]).status == "steady"
    assert CONFIDENCE == 0.90


def test_fewer_than_min_steps_is_insufficient() -> None:
    assert MIN_STEPS == 8
    v = check_steady_state([rising(n=7)])
    assert v.status == "insufficient"
    assert not v.flagged
    assert v.windows_checked == 0
    assert v.worst_drift is None
    assert v.worst_p_value is None
    assert check_steady_state([]).status == "insufficient"
    # exactly MIN_STEPS steps are checked
    assert check_steady_state([rising(n=8)]).windows_checked == 1


def test_several_windows_one_trending_flags_the_run() -> None:
    v = check_steady_state([flat(seed=1), rising(), flat(seed=3), flat(n=5)])
    assert v.status == "trending"
    assert v.windows_checked == 3  # the 5-step window is skipped
    assert v.worst_drift is not None
    assert v.worst_drift > 0.2


def test_all_flat_windows_are_steady() -> None:
    v = check_steady_state([flat(seed=s) for s in range(1, 4)])
    assert v.status == "steady"
    assert v.windows_checked == 3
