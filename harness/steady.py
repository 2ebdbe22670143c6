"""Steady-state check: are the measurement window's step times still trending?

A window measured before the system settled (caches, allocator, JIT, thermal,
frequency scaling) shows a monotone drift in step time. The check fits a
Theil-Sen slope (robust to outliers; Sen 1968) to step time against step index
and tests the trend with Kendall's tau. A window is "trending" when the fitted
drift across the window exceeds ``max_drift`` of the median step time AND the
trend is significant at ``alpha``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

MIN_STEPS = 8
"""Fewer steps than this per window give no verdict ("insufficient")."""


@dataclass(frozen=True)
class SteadyState:
    """Verdict of the trend check.

    Attributes:
        status: "steady", "trending" (a window is still drifting) or "insufficient"
            (every window has fewer than ``MIN_STEPS`` steps).
        worst_drift: the largest |drift| found, as a signed fraction of the median
            step time over the window (0.2 = step time rose 20% across the window).
        worst_p_value: Kendall's tau p-value of that window.
        windows_checked: how many windows had enough steps to check.
        max_drift: the drift threshold used.
        alpha: the significance level used.
    """

    status: str
    worst_drift: float | None
    worst_p_value: float | None
    windows_checked: int
    max_drift: float
    alpha: float

    @property
    def flagged(self) -> bool:
        """True when a measurement window was still trending."""
        return self.status == "trending"


def window_drift(step_times: Sequence[float]) -> tuple[float, float]:
    """Drift of one window and the p-value of its trend.

    Args:
        step_times: step times in seconds, in step order (length >= 2).

    Returns:
        (drift, p_value): drift = Theil-Sen slope x (n - 1) / median step time.
    """
    y = np.asarray(step_times, dtype=float)
    x = np.arange(len(y), dtype=float)
    median = float(np.median(y))
    if median <= 0 or float(np.ptp(y)) == 0.0:
        return 0.0, 1.0
    slope = float(sps.theilslopes(y, x)[0])
    tau = sps.kendalltau(x, y)
    p = float(tau.pvalue) if np.isfinite(tau.pvalue) else 1.0
    return slope * (len(y) - 1) / median, p


def check_steady_state(windows: Sequence[Sequence[float]], max_drift: float = 0.10, alpha: float = 0.05) -> SteadyState:
    """Check every measurement window for a trend.

    Args:
        windows: one sequence of step times (seconds) per measurement window.
        max_drift: drift (fraction of median step time) above which a significant
            trend flags the window.
        alpha: significance level of Kendall's tau test.
    """
    worst: tuple[float, float] | None = None
    checked = 0
    trending = False
    for times in windows:
        if len(times) < MIN_STEPS:
            continue
        checked += 1
        drift, p = window_drift(times)
        if abs(drift) > max_drift and p < alpha:
            trending = True
        if worst is None or abs(drift) > abs(worst[0]):
            worst = (drift, p)
    status = "insufficient" if checked == 0 else ("trending" if trending else "steady")
    return SteadyState(
        status=status,
        worst_drift=None if worst is None else worst[0],
        worst_p_value=None if worst is None else worst[1],
        windows_checked=checked,
        max_drift=max_drift,
        alpha=alpha,
    )
