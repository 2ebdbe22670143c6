"""Steady-state check: are the measurement window's step times still trending?

A window measured before the system settled (caches, allocator, JIT, thermal, frequency
scaling) shows a monotone drift in step time. The drift of a window is its Theil-Sen slope
(robust to outliers; Sen 1968) times (steps - 1), relative to the median step time. Each
window gets one of three verdicts:

- **trending**: the drift exceeds ``max_drift`` and the trend is significant (Kendall's tau
  p-value < ``alpha``), the rule used since the first release;
- **steady**: the whole two-sided 90% confidence interval of the drift lies within
  ``±max_drift``. That is an equivalence test, the two one-sided tests of Schuirmann (1987)
  at ``alpha`` = 0.05: the window is shown to drift less than the threshold, not merely not
  shown to drift more;
- **undetermined**: neither. The window has too few or too noisy steps to decide, so it is
  never called steady (a +43% drift without significance used to print "steady").

Bounded work for any input size (the validator recomputes this on submitted files): Kendall's
tau is O(n log n) in scipy; Theil-Sen is O(n^2) in time and memory, so a window of more than
:data:`THEIL_SEN_CAP` steps is fitted on a deterministic, evenly spaced subsample of exactly
that many steps (indices ``i * (n - 1) // (cap - 1)``, always including the first and last
step), with the original step indices as x. Integer indices make the subsample, and so the
verdict, reproducible bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

MIN_STEPS = 8
"""Fewer steps than this per window give no verdict ("insufficient")."""

THEIL_SEN_CAP = 500
"""Windows longer than this are fitted on an evenly spaced subsample of this many steps."""

CONFIDENCE = 0.90
"""Level of the drift's confidence interval (two one-sided tests at alpha = 0.05)."""

STATUSES = ("steady", "trending", "undetermined", "insufficient")
"""Every value ``SteadyState.status`` takes."""


@dataclass(frozen=True)
class WindowTrend:
    """The trend of one window.

    Attributes:
        drift: Theil-Sen slope x (n - 1) / median step time (0.2 = step time rose 20%).
        drift_low: lower end of the drift's confidence interval (same unit).
        drift_high: upper end.
        p_value: Kendall's tau p-value of a monotone trend (1.0 for a constant series).
        steps: steps in the window.
        fitted_steps: steps the Theil-Sen fit used (``min(steps, THEIL_SEN_CAP)``).
    """

    drift: float
    drift_low: float
    drift_high: float
    p_value: float
    steps: int
    fitted_steps: int


def subsample_indices(n: int, cap: int = THEIL_SEN_CAP) -> np.ndarray[Any, np.dtype[np.int64]]:
    """``0..n-1`` when ``n <= cap``, else ``cap`` evenly spaced indices from 0 to n - 1 (integer arithmetic)."""
    if n <= cap:
        return np.arange(n, dtype=np.int64)
    return (np.arange(cap, dtype=np.int64) * (n - 1)) // (cap - 1)


def window_trend(step_times: Sequence[float], confidence: float = CONFIDENCE) -> WindowTrend:
    """Drift of one window with its confidence interval and the p-value of its trend.

    Args:
        step_times: step times in seconds, in step order (length >= 2).
        confidence: level of the drift's interval.
    """
    y = np.asarray(step_times, dtype=float)
    n = len(y)
    median = float(np.median(y))
    if median <= 0 or float(np.ptp(y)) == 0.0:
        return WindowTrend(0.0, 0.0, 0.0, 1.0, n, min(n, THEIL_SEN_CAP))
    from scipy import stats as sps  # 0.5 s to import: only where a trend is computed

    idx = subsample_indices(n)
    fit = sps.theilslopes(y[idx], idx.astype(float), alpha=confidence)
    scale = (n - 1) / median
    tau = sps.kendalltau(np.arange(n, dtype=float), y)
    p = float(tau.pvalue) if np.isfinite(tau.pvalue) else 1.0
    low, high = sorted((float(fit.low_slope) * scale, float(fit.high_slope) * scale))
    return WindowTrend(float(fit.slope) * scale, low, high, p, n, len(idx))


def verdict(trend: WindowTrend, max_drift: float, alpha: float) -> str:
    """``trending``, ``steady`` or ``undetermined`` for one window (module docstring)."""
    if abs(trend.drift) > max_drift and trend.p_value < alpha:
        return "trending"
    if -max_drift <= trend.drift_low and trend.drift_high <= max_drift:
        return "steady"
    return "undetermined"


@dataclass(frozen=True)
class SteadyState:
    """Verdict of the trend check over all measurement windows.

    Attributes:
        status: one of :data:`STATUSES`: ``trending`` when any window trends, else
            ``undetermined`` when any window could not be decided, else ``steady``;
            ``insufficient`` when every window has fewer than ``MIN_STEPS`` steps.
        worst_drift: the largest |drift| found, as a signed fraction of the median step time.
        worst_p_value: Kendall's tau p-value of that window.
        windows_checked: windows with enough steps to check.
        max_drift: the drift threshold used.
        alpha: the significance level used.
        worst_drift_ci: ``[low, high]`` confidence interval of the worst window's drift.
        windows_trending: windows found trending.
        windows_undetermined: windows that could not be decided.
        confidence: level of the drift intervals.
        theil_sen_cap: steps above which a window's fit uses a subsample.
    """

    status: str
    worst_drift: float | None
    worst_p_value: float | None
    windows_checked: int
    max_drift: float
    alpha: float
    worst_drift_ci: list[float] | None = None
    windows_trending: int = 0
    windows_undetermined: int = 0
    confidence: float = CONFIDENCE
    theil_sen_cap: int = THEIL_SEN_CAP

    @property
    def flagged(self) -> bool:
        """True when a measurement window was still trending (an error for the validator)."""
        return self.status == "trending"

    @property
    def decided(self) -> bool:
        """True for ``steady`` and ``trending``: the check had the power to decide."""
        return self.status in ("steady", "trending")

    def explain(self) -> str:
        """One sentence for a report: the verdict, the numbers behind it and, when needed, the fix."""
        tol = f"±{self.max_drift:.0%}"
        worst = "" if self.worst_drift is None else f"largest drift {self.worst_drift:+.1%}"
        if self.worst_drift_ci is not None:
            lo, hi = self.worst_drift_ci
            worst += f" ({self.confidence:.0%} CI {lo:+.1%} to {hi:+.1%})"
        if self.status == "steady":
            return f"steady: every window's drift is within {tol} ({worst})"
        if self.status == "trending":
            return (
                f"still trending in {self.windows_trending} of {self.windows_checked} windows ({worst}). "
                "Fix: lengthen the warm-up (warmup_steps / warmup_seconds) and re-run on a quiet machine"
            )
        if self.status == "undetermined":
            return (
                f"undetermined in {self.windows_undetermined} of {self.windows_checked} windows ({worst}): "
                f"too few or too noisy steps to show the drift is within {tol}. "
                "Fix: raise measure_steps, or re-run on a quiet machine"
            )
        return f"too few steps to check (fewer than {MIN_STEPS} per window). Fix: measure at least {MIN_STEPS} steps"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def check_steady_state(windows: Sequence[Sequence[float]], max_drift: float = 0.10, alpha: float = 0.05) -> SteadyState:
    """Check every measurement window for a trend.

    Args:
        windows: one sequence of step times (seconds) per measurement window.
        max_drift: drift (fraction of median step time) that separates steady from trending.
        alpha: significance level of Kendall's tau test.

    Work is O(n log n) per window plus a fixed-size Theil-Sen fit (module docstring).
    """
    worst: WindowTrend | None = None
    counts = {"steady": 0, "trending": 0, "undetermined": 0}
    for times in windows:
        if len(times) < MIN_STEPS:
            continue
        trend = window_trend(times)
        counts[verdict(trend, max_drift, alpha)] += 1
        if worst is None or abs(trend.drift) > abs(worst.drift):
            worst = trend
    checked = sum(counts.values())
    if checked == 0:
        status = "insufficient"
    elif counts["trending"]:
        status = "trending"
    elif counts["undetermined"]:
        status = "undetermined"
    else:
        status = "steady"
    return SteadyState(
        status=status,
        worst_drift=None if worst is None else worst.drift,
        worst_p_value=None if worst is None else worst.p_value,
        windows_checked=checked,
        max_drift=max_drift,
        alpha=alpha,
        worst_drift_ci=None if worst is None else [worst.drift_low, worst.drift_high],
        windows_trending=counts["trending"],
        windows_undetermined=counts["undetermined"],
    )
