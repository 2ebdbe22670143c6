"""The median of paired ratios (harness/bare, docker/local) with a distribution-free 95% CI.

Each pair is measured close together in time, so the machine's slow drifts (other tenants,
frequency, the page cache) cancel in the pair's ratio; the pairs are then summarized by
their median, which one disturbed pair cannot move far. The interval is the order-statistic
confidence interval of the median (the binomial method: W. J. Conover, *Practical
Nonparametric Statistics*, 3rd ed., Wiley 1999, section 3.2, "confidence interval for a
quantile"). It assumes only that the pairs are independent, not that ratios are normal: with n
pairs, ``[x_(j), x_(n+1-j)]`` of the sorted ratios covers the median with probability
``1 - 2 P(B <= j-1)``, B ~ Binomial(n, 1/2); ``j`` is the largest with coverage >= 95%.
Below 6 pairs no such ``j`` exists and the interval is reported as unbounded.

Where the order alternates from pair to pair, two consecutive pairs form an ABBA quad
(:func:`quad_ratios`): a drift that is linear over the quad cancels in its ratio, not just on
average across pairs, so each quad's ratio is closer to the truth than either pair's.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

MIN_PAIRS = 6
"""The fewest pairs whose order-statistic interval reaches 95% coverage (2 / 2**6 = 3.1% < 5%)."""


@dataclass(frozen=True)
class RatioSummary:
    """Paired ratios summarized.

    Attributes:
        n: pairs.
        median: median ratio.
        low: lower bound of the CI of the median (None: too few ratios to bound).
        high: upper bound (None likewise).
        coverage: the interval's exact coverage under the binomial method (>= level), or None.
        level: the confidence asked for (0.95).
        geometric_mean: exp(mean log ratio), for comparison with a t-interval on log ratios.
        minimum: smallest ratio.
        maximum: largest ratio.
        method: how the interval was computed, in words.
    """

    n: int
    median: float
    low: float | None
    high: float | None
    coverage: float | None
    level: float
    geometric_mean: float
    minimum: float
    maximum: float
    method: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)

    def describe(self) -> str:
        """``0.9978 (95% CI 0.9951-1.0003, n=30)``, or the median with "too few to bound"."""
        if self.low is None or self.high is None:
            return f"{self.median:.4f} (n={self.n}: too few to bound a 95% CI, which needs {MIN_PAIRS}; run more pairs)"
        return f"{self.median:.4f} (95% CI {self.low:.4f}-{self.high:.4f}, n={self.n})"


def _binom_cdf_half(k: int, n: int) -> float:
    """P(B <= k) for B ~ Binomial(n, 1/2), exactly (integers; n is a pair count, small)."""
    return float(sum(math.comb(n, i) for i in range(k + 1)) / 2**n)


def median_interval(n: int, level: float = 0.95) -> tuple[int, float] | None:
    """``(j, coverage)``: the 1-based order statistic ``x_(j)`` and ``x_(n+1-j)`` bound the median
    with ``coverage >= level``; None when n is too small for any j.

    Raises:
        ValueError: n < 1 or level not in (0, 1).
    """
    if n < 1 or not 0 < level < 1:
        raise ValueError(f"need n >= 1 and 0 < level < 1, got n={n}, level={level}")
    best: tuple[int, float] | None = None
    for j in range(1, n // 2 + 1):
        coverage = 1 - 2 * _binom_cdf_half(j - 1, n)
        if coverage >= level:
            best = (j, coverage)
        else:
            break
    return best


def quad_ratios(numerators: Sequence[float], denominators: Sequence[float]) -> list[float]:
    """Ratios of ABBA quads: pairs ``(2k, 2k+1)``, measured in opposite orders, pooled as
    ``(num[2k] + num[2k+1]) / (den[2k] + den[2k+1])`` (each a throughput in samples/s over
    blocks of equal steps). A last pair without a partner is left out.

    Raises:
        ValueError: the sequences differ in length, or a value is not a positive finite number.
    """
    if len(numerators) != len(denominators):
        raise ValueError(f"{len(numerators)} numerators but {len(denominators)} denominators")
    if any(not (math.isfinite(x) and x > 0) for x in (*numerators, *denominators)):
        raise ValueError("throughputs must be positive finite numbers")
    return [
        (numerators[k] + numerators[k + 1]) / (denominators[k] + denominators[k + 1])
        for k in range(0, len(numerators) - 1, 2)
    ]


def summarize_ratios(ratios: Sequence[float], level: float = 0.95, unit: str = "paired ratios") -> RatioSummary:
    """Median of ``ratios`` with its order-statistic CI (see the module docstring).

    Raises:
        ValueError: no ratios, or a ratio that is not a positive finite number.
    """
    if not ratios:
        raise ValueError("no ratios to summarize")
    if any(not (math.isfinite(r) and r > 0) for r in ratios):
        raise ValueError(f"ratios must be positive finite numbers, got {list(ratios)}")
    xs = sorted(ratios)
    n = len(xs)
    bounds = median_interval(n, level)
    low = high = coverage = None
    if bounds is not None:
        j, coverage = bounds
        low, high = xs[j - 1], xs[n - j]
    return RatioSummary(
        n=n,
        median=statistics.median(xs),
        low=low,
        high=high,
        coverage=coverage,
        level=level,
        geometric_mean=math.exp(statistics.fmean(math.log(r) for r in xs)),
        minimum=xs[0],
        maximum=xs[-1],
        method=f"median of {unit}; distribution-free order-statistic CI (binomial method, Conover 1999 §3.2)",
    )
