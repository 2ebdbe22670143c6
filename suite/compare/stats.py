"""The ratio of two throughputs, B/A, with a 95% confidence interval and a significance verdict.

Method (written into every comparison's output): **the delta method on the log scale, with
each side's standard error from the same units as its runs' own intervals.**

Each run's throughput interval (:func:`harness.intervals.throughput_interval`) is a t-interval
over units of its measurement: batch means of contiguous measured steps (fewer than 5
repeats), or the repeats' windows (5 or more), each unit its seconds per sample
(:func:`harness.intervals.interval_units`). A side's units (those of all its results, pooled)
have mean ``m``, standard deviation ``s`` and count ``n``; its log throughput ``-ln m`` has
the standard error ``r = s / (m sqrt(n))`` to first order (the delta method: Var ln X ≈
Var X / E[X]², Casella & Berger, "Statistical Inference", 2nd ed., 2002, sec. 5.5.4). The ratio
is the suites' throughputs' (total samples / total seconds), and its interval is
``exp(ln(B/A) ± t(df) sqrt(r_A² + r_B²))`` with Welch–Satterthwaite degrees of freedom
``(r_A² + r_B²)² / (r_A⁴/(n_A-1) + r_B⁴/(n_B-1))`` (Welch, Biometrika 34, 1947). So a ratio uses
the within-window information that each run's own interval uses: two steady runs with ±2%
intervals over 10 batches each have a ratio interval of about ±2.6%, where Welch's t over their
2 + 2 repeat windows (one degree of freedom, t = 12.7) gave ±30% or more.

The log scale suits a quantity that is positive and changes by factors (Fleming & Wallace,
"How not to lie with statistics", CACM 29(3), 1986): the interval is never unbounded, and the
interval of A/B is exactly the reciprocal of the one of B/A. With several results on a side
their units are pooled: the run-to-run variation enters only as far as it spreads the units.
A side whose runs cannot bound their own interval (fewer than 4 measured steps in one repeat)
gives no interval either; the output says so and the difference is called undetermined.

The difference is significant when the interval excludes 1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from harness.intervals import Unbounded, interval_units
from harness.records import Phase
from harness.stats import combine_ranks
from suite.results import Result

METHOD = "delta-log"
"""The ``method`` of every ratio with an interval."""


@dataclass(frozen=True)
class Unit:
    """A piece of measurement: ``samples`` processed in ``seconds`` (all ranks; the slowest rank's time)."""

    samples: int
    seconds: float


@dataclass(frozen=True)
class RatioEstimate:
    """B/A with its interval.

    Attributes:
        ratio: the estimate of throughput B / throughput A.
        low, high: the interval's bounds, or None when none could be computed.
        level: confidence level (0.95).
        method: ``delta-log`` (module docstring) or ``none``.
        description: the method in words, with the units and counts used.
        units_a, units_b: how many units (batches or repeat windows) each side contributed.
        df: Welch–Satterthwaite degrees of freedom (``delta-log`` with some spread only).
    """

    ratio: float
    low: float | None
    high: float | None
    level: float
    method: str
    description: str
    units_a: int
    units_b: int
    df: float | None = None

    @property
    def significant(self) -> bool | None:
        """True when the interval excludes 1, None when there is no interval."""
        if self.low is None or self.high is None:
            return None
        return self.low > 1.0 or self.high < 1.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, with ``significant``."""
        return {**asdict(self), "significant": self.significant}


def windows(results: Sequence[Result]) -> list[Unit]:
    """Every measurement window of ``results``, ranks combined (total samples, slowest rank's seconds)."""
    return [
        Unit(w.samples, w.seconds)
        for r in results
        for w in combine_ranks(r.windows)
        if w.phase is Phase.MEASUREMENT and w.seconds > 0
    ]


@dataclass(frozen=True)
class SideError:
    """One side's log-throughput standard error: ``se`` from ``n`` units formed as ``method`` says."""

    se: float
    n: int
    method: str


def side_error(results: Sequence[Result]) -> SideError | str:
    """The standard error of ln(throughput) of a side (module docstring), or why there is none.

    Each result contributes the units of its own interval (:func:`harness.intervals.interval_units`).
    """
    values: list[float] = []
    methods: list[str] = []
    for r in results:
        units = interval_units(r.steps, r.windows)
        if isinstance(units, Unbounded):
            return units.reason
        values += units.seconds_per_sample
        methods.append(units.method)
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    words = methods[0] if len(set(methods)) == 1 else "; ".join(methods)
    if len(results) > 1:
        words = f"{len(results)} runs pooled: {words}"
    return SideError(sd / (mean * math.sqrt(n)), n, words)


def log_ratio_interval(
    ratio: float, a: SideError, b: SideError, level: float = 0.95, what: str = "ratio"
) -> RatioEstimate:
    """B/A = ``ratio`` with its interval from the two sides' standard errors (module docstring).

    Raises:
        ValueError: ``ratio`` is not positive, or a side has fewer than 2 units.
    """
    if ratio <= 0 or not math.isfinite(ratio):
        raise ValueError(f"a {what} must be positive and finite, got {ratio}")
    if a.n < 2 or b.n < 2:
        raise ValueError("the delta method needs at least 2 units per side")
    va, vb = a.se**2, b.se**2
    se = math.sqrt(va + vb)
    words = f"delta method on the log scale with each run's own interval units (A: {a.method}; B: {b.method})"
    if se == 0.0:
        return RatioEstimate(ratio, ratio, ratio, level, METHOD, words + "; no spread", a.n, b.n, None)
    wa, wb = va / (va + vb), vb / (va + vb)  # shares of the variance: no underflow of tiny variances squared
    df = 1 / (wa**2 / (a.n - 1) + wb**2 / (b.n - 1))
    from scipy import stats as sps  # 0.5 s to import: only where an interval is computed

    t = float(sps.t.ppf(0.5 + level / 2, df))
    half = math.exp(t * se)  # exp(ln ratio ± t se), computed so that low <= ratio <= high exactly
    return RatioEstimate(ratio, ratio / half, ratio * half, level, METHOD, f"{words}, df {df:.1f}", a.n, b.n, df)


def _rate(units: Sequence[Unit]) -> float:
    return sum(u.samples for u in units) / sum(u.seconds for u in units)


def ratio_interval(a: Sequence[Result], b: Sequence[Result], level: float = 0.95) -> RatioEstimate:
    """B/A for two sets of results of one config each, with its interval (module docstring) or none.

    Raises:
        ValueError: a side has no measurement window.
    """
    wa, wb = windows(a), windows(b)
    if not wa or not wb:
        raise ValueError("a side has no measurement window")
    ratio = _rate(wb) / _rate(wa)
    ea, eb = side_error(a), side_error(b)
    if isinstance(ea, SideError) and isinstance(eb, SideError):
        return log_ratio_interval(ratio, ea, eb, level)
    why = "; ".join(f"{n}: {e}" for n, e in (("A", ea), ("B", eb)) if isinstance(e, str))
    return RatioEstimate(
        ratio,
        None,
        None,
        level,
        "none",
        f"no interval: a side's runs cannot bound their own interval ({why}); re-run with more measured "
        "steps (at least 4 per window) or --set repeats=3",
        ea.n if isinstance(ea, SideError) else 0,
        eb.n if isinstance(eb, SideError) else 0,
    )
