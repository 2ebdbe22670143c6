"""Steady-state check (harness.steady) on synthetic step-time series."""

from __future__ import annotations

import numpy as np
import pytest

from harness.steady import MIN_STEPS, check_steady_state, window_drift


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


def test_window_drift_of_exact_line() -> None:
    y = [1.0 + 0.3 * i / 39 for i in range(40)]
    drift, p = window_drift(y)
    assert drift == pytest.approx(0.3 / float(np.median(y)))
    assert p < 1e-10


def test_window_drift_of_constant_series() -> None:
    assert window_drift([0.5] * 20) == (0.0, 1.0)


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


def test_large_drift_that_is_not_significant_is_steady() -> None:
    v = check_steady_state([rising()], alpha=1e-30)
    assert v.status == "steady"
    assert v.worst_drift is not None
    assert v.worst_drift > 0.2


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
