"""Duplicate runs, caught by identity and by measurement, not by exact bytes.

A run counted twice inflates a group's run count and the band derived from it. Three tests:

* identity: the supervisor-minted ``run_id``, the ``run_uid`` every rank's harness held
  and the wall-clock ``started_at`` are unique across a submission (where recorded);
* sorted step times: two runs whose measured step times, each divided by its median and
  sorted, agree within :func:`sorted_tolerance` are one measurement (robust to reordered steps, to
  changes of 1e-9 s, to a scaled copy and to any change of the warm-up). The tolerance follows the
  runs' own spread: two honest runs differ by a fair part of it, a copy by nothing;
* correlation: two runs of at least :data:`MIN_CORRELATED_STEPS` measured steps whose step
  times, in recorded order, correlate at :data:`MAX_CORRELATION` or more, and differ by much less
  than their own spread (:data:`NOISE_FRACTION`), are one measurement with noise added
  (independent runs correlate weakly: the committed runs at |r| < 0.4; honest runs that share a
  pattern, a slow first step say, correlate but differ by their whole random spread).

Spread is the scaled median absolute deviation of the step times divided by their median (a robust
standard deviation, as a fraction: Rousseeuw & Croux, JASA 88 (1993), the 1.4826 factor for normal data).
Without the spread, two steady honest runs (a GPU's step times vary by 0.1% or less) were one
measurement: simulated normal runs with a 0.1% spread agreed within 1e-3 in 42% of pairs of 8 steps and
91% of pairs of 1000 steps. Simulated honest runs (normal, log-normal and exponential-tailed step
times, 8 to 2000 steps, 500 to 5000 pairs each) differed by at least 0.12 of their spread.

Work is O(n log n) in the number of step records: sorting each run, sorting runs by a
one-number sketch and comparing neighbours only (at most :data:`NEIGHBOURS` per run), and
correlations over at most :data:`CORRELATION_STEPS` steps per run among at most
:data:`MAX_CORRELATED_RUNS` runs of one step count.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import median_abs_deviation

from harness.records import Phase
from suite.results import Result

SORTED_TOL = 1e-3
"""Largest difference, as a fraction of the median step time, between two runs' sorted step times
that still counts as one measurement (the closest two committed runs differ by 1.05e-2)."""
SHORT_SORTED_TOL = 1e-6
""":data:`SORTED_TOL` for runs of fewer than :data:`MIN_CORRELATED_STEPS` measured steps. Divided by its
median, a run of 3 steps leaves two numbers free, and two honest tiny runs on a 2-vCPU Xeon agreed within
8.0e-04 (CI, 2026-11-27). A copy, rescaled, reordered or changed by 1e-9 s, still agrees within this."""
SPREAD_FRACTION = 0.02
"""Runs of :data:`MIN_CORRELATED_STEPS` or more steps are one measurement by sorted step times only when
they agree within this fraction of their spread (at most :data:`SORTED_TOL`, at least
:data:`SHORT_SORTED_TOL`): a sixth of the smallest gap simulated honest runs showed (0.12)."""
NOISE_FRACTION = 0.25
"""Correlated runs are one measurement only when the spread of their difference is at most this
fraction of sqrt(2) times the smaller run's spread (two independent runs: about 1). Honest runs of 8 steps
that share one slow step (3%, spread 0.05%) correlate above 0.99 and met 0.5 in 8% of simulated pairs."""
MAX_CORRELATION = 0.99
"""Pearson correlation of step times in recorded order at or above which two runs are one measurement."""
MIN_CORRELATED_STEPS = 8
"""Fewest measured steps for the correlation test to mean anything."""
CORRELATION_STEPS = 4096
"""Steps per run (the first ones, in recorded order) used by the correlation test."""
MAX_CORRELATED_RUNS = 256
"""Most runs of one step count compared by correlation (a score needs 5)."""
NEIGHBOURS = 32
"""Runs after each run, in sketch order, compared by sorted step times."""


@dataclass(frozen=True)
class Twin:
    """One run found to duplicate an earlier one.

    Attributes:
        index: the later run's position in the input.
        original: the earlier run's position.
        code: ``duplicate-run`` (same identity) or ``duplicate-measurement``.
        reason: why, in words.
    """

    index: int
    original: int
    code: str
    reason: str


def step_times(result: Result) -> np.ndarray:
    """Measured step times (seconds), in (rank, repeat, index) order."""
    ms = sorted((s.rank, s.repeat, s.index, s.step_s) for s in result.steps if s.phase is Phase.MEASUREMENT)
    return np.fromiter((t for *_, t in ms), dtype=float, count=len(ms))


def _identities(result: Result) -> list[tuple[str, str]]:
    out = [("run id", result.run_id)]
    if result.run_uid:
        out.append(("run uid", result.run_uid))
    if result.started_at:
        out.append(("start time", result.started_at))
    return out


def _identity_twins(results: Sequence[Result]) -> list[Twin]:
    seen: dict[tuple[str, str], int] = {}
    out = []
    for i, r in enumerate(results):
        for kind, value in _identities(r):
            j = seen.setdefault((kind, value), i)
            if j != i:
                out.append(Twin(i, j, "duplicate-run", f"the same {kind} {value[:40]!r}"))
                break
    return out


def spread(relative: np.ndarray) -> float:
    """Robust spread of step times already divided by their median: their median absolute deviation
    scaled for normal data (``scipy.stats.median_abs_deviation(scale="normal")``, 1.4826 x), or their
    standard deviation where more than half are equal (a fraction; 0.0 for fewer than 2 steps or identical
    ones)."""
    if len(relative) < 2:
        return 0.0
    mad = float(median_abs_deviation(relative, scale="normal"))
    return mad if mad > 0 else float(np.std(relative))


def _noise_ratio(a: np.ndarray, b: np.ndarray) -> float:
    """The spread of two runs' difference (step times in recorded order, each divided by its median) over
    sqrt(2) times the smaller run's spread: about 1 for independent runs, 0 for a copy (0.0 when either
    median or spread is not positive, as for a forged run of equal steps)."""
    med_a, med_b = float(np.median(a)), float(np.median(b))
    if med_a <= 0 or med_b <= 0:
        return 0.0
    ra, rb = a / med_a, b / med_b
    own = np.sqrt(2.0) * min(spread(ra), spread(rb))
    return spread(ra - rb) / own if own > 0 else 0.0


def sorted_tolerance(steps: int, spread_a: float, spread_b: float) -> float:
    """Largest gap (a fraction of the median step time) between two runs' sorted step times that still
    makes them one measurement: :data:`SHORT_SORTED_TOL` below :data:`MIN_CORRELATED_STEPS` steps, else
    :data:`SPREAD_FRACTION` of the smaller spread, kept within [:data:`SHORT_SORTED_TOL`, :data:`SORTED_TOL`]."""
    if steps < MIN_CORRELATED_STEPS:
        return SHORT_SORTED_TOL
    return min(SORTED_TOL, max(SHORT_SORTED_TOL, SPREAD_FRACTION * min(spread_a, spread_b)))


def _normalized_sorted(times: np.ndarray) -> np.ndarray | None:
    median = float(np.median(times)) if len(times) else 0.0
    return np.sort(times) / median if median > 0 else None


def _sorted_twins(series: list[np.ndarray | None], skip: set[int]) -> list[Twin]:
    keyed = [(float(s[int(len(s) * 0.9)]), len(s), i) for i, s in enumerate(series) if s is not None and len(s)]
    spreads = [spread(s) if s is not None else 0.0 for s in series]  # once per run, not per compared pair
    keyed.sort()
    out: list[Twin] = []
    for pos, (sketch, n, i) in enumerate(keyed):
        for sketch_j, n_j, j in keyed[pos + 1 : pos + 1 + NEIGHBOURS]:
            if sketch_j - sketch > SORTED_TOL:
                break
            a, b = series[i], series[j]
            if n_j != n or i in skip or j in skip or a is None or b is None:
                continue
            gap = float(np.max(np.abs(a - b)))
            if gap <= sorted_tolerance(n, spreads[i], spreads[j]):
                first, later = min(i, j), max(i, j)
                out.append(Twin(later, first, "duplicate-measurement", f"sorted step times within {gap:.1e}"))
                skip.add(later)
    return out


def _correlated_twins(raw: list[np.ndarray], skip: set[int]) -> list[Twin]:
    by_n: dict[int, list[int]] = {}
    for i, t in enumerate(raw):
        if len(t) >= MIN_CORRELATED_STEPS and i not in skip:
            by_n.setdefault(len(t), []).append(i)
    out: list[Twin] = []
    for members in by_n.values():
        members = members[:MAX_CORRELATED_RUNS]
        z_raw = np.stack([raw[i][:CORRELATION_STEPS] for i in members])
        z = z_raw - z_raw.mean(axis=1, keepdims=True)
        norms = np.linalg.norm(z, axis=1)
        ok = norms > 0
        z[ok] /= norms[ok, None]
        corr = z @ z.T
        for a in range(len(members)):
            for b in range(a):
                if not (ok[a] and ok[b] and corr[a, b] >= MAX_CORRELATION and members[b] not in skip):
                    continue
                ratio = _noise_ratio(z_raw[a], z_raw[b])
                if ratio <= NOISE_FRACTION:
                    why = f"step times correlate at {corr[a, b]:.4f} and differ by {ratio:.2f} of their spread"
                    out.append(Twin(members[a], members[b], "duplicate-measurement", why))
                    skip.add(members[a])
                    break
    return out


def find_twins(results: Sequence[Result]) -> list[Twin]:
    """Every run that duplicates an earlier one in ``results`` (each run reported once, against the first)."""
    twins = _identity_twins(results)
    skip = {t.index for t in twins}
    raw = [step_times(r) for r in results]
    twins += _sorted_twins([_normalized_sorted(t) for t in raw], skip)
    twins += _correlated_twins(raw, skip)
    return sorted(twins, key=lambda t: t.index)
