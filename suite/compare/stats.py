"""The ratio of two throughputs, B/A, with a 95% confidence interval and a significance verdict.

Method (written into every comparison's output):

1. **Welch's t on log throughputs**, when both sides have at least 2 measurement
   windows (repeats). With ``x_i = ln`` of A's window throughputs and ``y_j`` of B's,
   the estimate is ``exp(mean(y) - mean(x))``, the ratio of the geometric means of the
   windows' throughputs; the interval is ``exp(d ± t(df) · se)`` with
   ``se² = s_x²/n_x + s_y²/n_y`` and Welch–Satterthwaite degrees of freedom (Welch,
   "The generalization of 'Student's' problem when several different population
   variances are involved", Biometrika 34, 1947). The log scale suits a quantity that
   is positive and changes by factors (Fleming & Wallace, "How not to lie with
   statistics: the correct way to summarize benchmark results", CACM 29(3), 1986);
   it is how ratios of geometric means get their interval in bioequivalence testing
   (FDA, "Statistical Approaches to Establishing Bioequivalence", 2001). Unlike
   Fieller's interval for a ratio of means (Fieller, "Some problems in interval
   estimation", JRSS B 16, 1954), which Kalibera & Jones recommend for benchmark
   ratios ("Rigorous Benchmarking in Reasonable Time", ISMM 2013), it is never
   unbounded, and the interval for A/B is exactly the reciprocal of the one for B/A.
2. **A percentile bootstrap over windows**, when a side has fewer than 2 windows.
   A side with fewer than :data:`MIN_UNITS` windows has them split into contiguous
   batches of measured steps (up to 10 per window, at least 2 steps each, as the
   harness's batch means do), a side with more keeps its windows, and each side's
   units are resampled with replacement
   (:data:`RESAMPLES` times, fixed seed, so the output is reproducible). Each resample's
   throughput is total samples / total seconds, as the suite's throughput is; the
   interval is the 2.5th and 97.5th percentile of the resampled ratios (Efron &
   Tibshirani, "An Introduction to the Bootstrap", 1993, ch. 13). Resampling
   contiguous batches rather than single steps keeps the autocorrelation of
   neighbouring steps inside each unit (Carlstein, Ann. Statist. 14(3), 1986).
3. **No interval** when a side has fewer than :data:`MIN_UNITS` units even then; the
   output says so and the difference is called undetermined.

The difference is significant when the interval excludes 1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from harness.records import Phase
from harness.stats import combine_ranks, step_spans
from suite.results import Result

RESAMPLES = 4000
"""Bootstrap resamples."""
SEED = 20131
"""Bootstrap seed: the same inputs always give the same interval."""
MIN_UNITS = 4
"""Fewest resampling units (windows or batches) per side for a bootstrap interval."""
MAX_BATCHES = 10
"""Most batches one window is split into."""


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
        method: ``welch-log``, ``bootstrap`` or ``none``.
        description: the method in words, with the units and counts used.
        units_a, units_b: how many units (windows or batches) each side contributed.
        df: Welch's degrees of freedom (``welch-log`` only).
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


def batches(results: Sequence[Result]) -> list[Unit]:
    """Each measurement window split into up to MAX_BATCHES contiguous batches of at least 2 steps.

    A batch holds the samples of all ranks and lasts as long as its slowest rank's
    steps (their spans, which add up to the window's seconds).
    """
    out: list[Unit] = []
    for r in results:
        raw = [w for w in r.windows if w.phase is Phase.MEASUREMENT]
        for repeat in sorted({w.repeat for w in raw}):
            by_rank = {w.rank: w for w in raw if w.repeat == repeat}
            series = {
                k: sorted(
                    (s for s in r.steps if s.phase is Phase.MEASUREMENT and s.repeat == repeat and s.rank == k),
                    key=lambda s: s.index,
                )
                for k in by_rank
            }
            n = min(len(v) for v in series.values())
            if n < 2:
                continue
            spans = {k: step_spans(series[k], by_rank[k]) for k in by_rank}
            for idx in np.array_split(np.arange(n), min(MAX_BATCHES, n // 2)):
                samples = sum(series[k][i].samples for k in by_rank for i in idx)
                seconds = max(sum(spans[k][i] for i in idx) for k in by_rank)
                if seconds > 0:
                    out.append(Unit(samples, seconds))
    return out


def _rate(units: Sequence[Unit]) -> float:
    return sum(u.samples for u in units) / sum(u.seconds for u in units)


def welch_log_ratio(a: Sequence[float], b: Sequence[float], level: float = 0.95) -> RatioEstimate:
    """Welch's t interval on log throughputs (see the module docstring); ``a``, ``b``: samples/s, >= 2 each.

    Raises:
        ValueError: fewer than 2 values on a side, or a value that is not positive.
    """
    if len(a) < 2 or len(b) < 2:
        raise ValueError("Welch's t needs at least 2 throughputs per side")
    if min(*a, *b) <= 0:
        raise ValueError("throughputs must be positive")
    x, y = np.log(np.asarray(a, dtype=float)), np.log(np.asarray(b, dtype=float))
    d = float(y.mean() - x.mean())
    va, vb = float(x.var(ddof=1)) / len(x), float(y.var(ddof=1)) / len(y)
    se = math.sqrt(va + vb)
    words = f"Welch's t on log throughputs of {len(a)} + {len(b)} repeat windows (ratio of geometric means)"
    if se == 0.0:
        r = math.exp(d)
        return RatioEstimate(r, r, r, level, "welch-log", words + "; no spread", len(a), len(b), None)
    df = (va + vb) ** 2 / (va**2 / (len(x) - 1) + vb**2 / (len(y) - 1))
    from scipy import stats as sps  # 0.5 s to import: only where an interval is computed

    t = float(sps.t.ppf(0.5 + level / 2, df))
    return RatioEstimate(
        math.exp(d),
        math.exp(d - t * se),
        math.exp(d + t * se),
        level,
        "welch-log",
        f"{words}, df {df:.1f}",
        len(a),
        len(b),
        df,
    )


def bootstrap_ratio(
    a: Sequence[Unit], b: Sequence[Unit], level: float = 0.95, why: str = "", resamples: int = RESAMPLES
) -> RatioEstimate:
    """Percentile bootstrap of rate(B) / rate(A) over units (see the module docstring).

    Work is ``resamples × (len(a) + len(b))``, done in chunks so memory stays bounded.

    Raises:
        ValueError: fewer than MIN_UNITS units on a side.
    """
    if len(a) < MIN_UNITS or len(b) < MIN_UNITS:
        raise ValueError(f"a bootstrap needs at least {MIN_UNITS} units per side")
    rng = np.random.default_rng(SEED)
    sa, ta = np.array([u.samples for u in a], dtype=float), np.array([u.seconds for u in a])
    sb, tb = np.array([u.samples for u in b], dtype=float), np.array([u.seconds for u in b])
    ratios: list[np.ndarray[Any, np.dtype[np.float64]]] = []
    chunk = max(1, 2_000_000 // (len(a) + len(b)))
    for start in range(0, resamples, chunk):
        m = min(chunk, resamples - start)
        ia, ib = rng.integers(0, len(a), size=(m, len(a))), rng.integers(0, len(b), size=(m, len(b)))
        ratios.append((sb[ib].sum(1) / tb[ib].sum(1)) / (sa[ia].sum(1) / ta[ia].sum(1)))
    low, high = np.quantile(np.concatenate(ratios), [0.5 - level / 2, 0.5 + level / 2])
    words = (
        f"percentile bootstrap over {len(a)} + {len(b)} windows and batches of measured steps "
        f"({resamples} resamples, seed {SEED})" + (f", because {why}" if why else "")
    )
    return RatioEstimate(_rate(b) / _rate(a), float(low), float(high), level, "bootstrap", words, len(a), len(b))


def ratio_interval(a: Sequence[Result], b: Sequence[Result], level: float = 0.95) -> RatioEstimate:
    """B/A for two sets of results of one config each: Welch on log throughputs, else a bootstrap, else no interval.

    Raises:
        ValueError: a side has no measurement window.
    """
    wa, wb = windows(a), windows(b)
    if not wa or not wb:
        raise ValueError("a side has no measurement window")
    if len(wa) >= 2 and len(wb) >= 2:
        return welch_log_ratio([u.samples / u.seconds for u in wa], [u.samples / u.seconds for u in wb], level)
    few = " and ".join(f"{n} has {len(w)} repeat window" for n, w in (("A", wa), ("B", wb)) if len(w) < 2)
    ua = wa if len(wa) >= MIN_UNITS else batches(a)
    ub = wb if len(wb) >= MIN_UNITS else batches(b)
    if len(ua) >= MIN_UNITS and len(ub) >= MIN_UNITS:
        return bootstrap_ratio(ua, ub, level, why=few)
    return RatioEstimate(
        _rate(wb) / _rate(wa),
        None,
        None,
        level,
        "none",
        f"no interval: {few}, and too few measured steps to split it into {MIN_UNITS} batches "
        f"(A has {len(ua)}, B {len(ub)}); re-run with --set repeats=3, or at least {2 * MIN_UNITS} "
        "measured steps",
        len(ua),
        len(ub),
    )
