"""Confidence intervals of the throughput, and the rank and window bookkeeping they share with the summary.

Intervals are computed on seconds per sample and then inverted, never on samples/s directly
(averaging rates over-weights fast steps). Global throughput of a distributed run is the
total samples of all ranks over the slowest rank's window (:func:`combine_ranks`). Every
function here is O(n) in the number of records (groups are dicts, never nested scans), so
a submitted file of any size is summarized in bounded time.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from harness.records import Phase, StepRecord, WindowRecord

MIN_REPEATS_T = 5
"""With at least this many repeats the interval is a t-interval over the repeats; below, batch means."""

BATCHES = 10
"""Batch means use about this many batches in all (fewer when the steps run out)."""

MIN_BATCH_STEPS = 2
"""A batch holds at least this many contiguous steps of one window."""


@dataclass(frozen=True)
class Interval:
    """A two-sided confidence interval.

    Attributes:
        low: lower bound (same unit as the estimate).
        high: upper bound. None only in results written before unbounded intervals were
            reported as :class:`Unbounded` (the seconds-per-sample interval reached zero).
        level: confidence level, e.g. 0.95.
        method: how it was computed, in words.
    """

    low: float
    high: float | None
    level: float
    method: str


@dataclass(frozen=True)
class Unbounded:
    """An interval that the records cannot bound, and why.

    Attributes:
        reason: what is missing and the fix, in words a user can act on.
        method: the method that was tried.
    """

    reason: str
    method: str


def _t_interval_inverted(seconds_per_sample: Sequence[float], level: float, method: str) -> Interval | Unbounded:
    """t-interval on seconds/sample, inverted into samples/s; unbounded when its lower end reaches 0."""
    x = np.asarray(seconds_per_sample, dtype=float)
    n = len(x)
    mean = float(x.mean())
    from scipy import stats as sps  # 0.5 s to import: only where an interval is computed

    half = float(sps.t.ppf(0.5 + level / 2, n - 1) * x.std(ddof=1) / math.sqrt(n))
    low_tps, high_tps = mean - half, mean + half
    if low_tps <= 0:
        return Unbounded(
            f"too few repeats to bound: the {n} values vary so much that the {level:.0%} interval of "
            "seconds per sample reaches zero. Fix: raise repeats or measure_steps, and run on a quiet machine",
            method,
        )
    return Interval(low=1.0 / high_tps, high=1.0 / low_tps, level=level, method=method)


def _point_or_t(values: Sequence[float], level: float, method: str) -> Interval | Unbounded:
    if len(set(values)) == 1:
        t = 1.0 / values[0]
        return Interval(t, t, level, method)
    return _t_interval_inverted(values, level, method)


def _allocate_batches(lengths: Sequence[int], total: int) -> list[int]:
    """Batches per window: one at a time to the window whose batches would stay longest.

    Each window gets at most ``length // MIN_BATCH_STEPS`` batches, so batch lengths are as
    equal as the windows allow. One window of n steps gets ``min(total, n // 2)``.
    """
    counts = [0] * len(lengths)
    for _ in range(total):
        best = -1
        for i, n in enumerate(lengths):
            if counts[i] < n // MIN_BATCH_STEPS and (
                best < 0 or n * (counts[best] + 1) > lengths[best] * (counts[i] + 1)
            ):
                best = i
        if best < 0:
            break
        counts[best] += 1
    return counts


def group_measured_steps(steps: Sequence[StepRecord]) -> dict[tuple[int, int], list[StepRecord]]:
    """Measured steps by (repeat, rank), in input order: one pass, O(n)."""
    out: dict[tuple[int, int], list[StepRecord]] = {}
    for s in steps:
        if s.phase is Phase.MEASUREMENT:
            out.setdefault((s.repeat, s.rank), []).append(s)
    return out


@dataclass(frozen=True)
class IntervalUnits:
    """The units a run's throughput interval is built from: seconds per sample of each unit.

    Attributes:
        seconds_per_sample: one value per unit (a repeat's window, or a batch of contiguous
            steps), each its seconds over its samples (all ranks; the slowest rank's seconds).
        method: how the units were formed, in words (e.g. "batch means, 10 batches of 2 steps").
    """

    seconds_per_sample: list[float]
    method: str


def interval_units(steps: Sequence[StepRecord], windows: Sequence[WindowRecord]) -> IntervalUnits | Unbounded:
    """The units of :func:`throughput_interval` (see there for how they are chosen), or why there are too few.

    With :data:`MIN_REPEATS_T` or more repeats: one unit per repeat's window. With fewer: batch
    means pooled over the windows, else the repeats (2-4 repeats whose windows hold too few steps
    for 2 batches). Whatever compares two runs (a ratio's interval) uses these same units, so it
    rests on the same information as each run's own interval. Work is O(n) in the records.
    """
    measured = [w for w in combine_ranks(windows) if w.phase is Phase.MEASUREMENT]
    repeats = IntervalUnits([w.seconds / w.samples for w in measured], f"t-interval over {len(measured)} repeats")
    if len(measured) >= MIN_REPEATS_T:
        return repeats
    raw: dict[int, dict[int, WindowRecord]] = {}
    for w in windows:
        if w.phase is Phase.MEASUREMENT:
            raw.setdefault(w.repeat, {})[w.rank] = w
    grouped = group_measured_steps(steps)
    plans = []  # (series per rank, window per rank, usable steps)
    for repeat in sorted(raw):
        by_rank = raw[repeat]
        series = {r: sorted(grouped.get((repeat, r), []), key=lambda s: s.index) for r in by_rank}
        plans.append((series, by_rank, min(len(v) for v in series.values())))
    counts = _allocate_batches([n for _, _, n in plans], BATCHES)
    total_steps = sum(n for _, _, n in plans)
    if sum(counts) < 2:
        if len(measured) >= 2:
            return repeats
        return Unbounded(
            f"too few measured steps to bound ({total_steps} in {len(plans)} window(s); batch means need "
            "at least 4, two batches of 2). Fix: raise measure_steps or repeats",
            "batch means",
        )
    per_batch: list[float] = []
    sizes: list[int] = []
    for (series, by_rank, n), k in zip(plans, counts, strict=True):
        if k == 0:
            continue
        spans = {r: step_spans(series[r], by_rank[r]) for r in by_rank}
        for b in np.array_split(np.arange(n), k):
            per_batch.append(
                max(sum(spans[r][i] for i in b) for r in by_rank)
                / sum(series[r][i].samples for r in by_rank for i in b)
            )
            sizes.append(len(b))
    lo, hi = min(sizes), max(sizes)
    where = "" if len(plans) == 1 else f" over {sum(1 for k in counts if k)} windows"
    return IntervalUnits(
        per_batch, f"batch means{where}, {len(per_batch)} batches of {lo if lo == hi else f'{lo}-{hi}'} steps"
    )


def throughput_interval(
    steps: Sequence[StepRecord], windows: Sequence[WindowRecord], level: float = 0.95
) -> Interval | Unbounded:
    """Confidence interval of the throughput, or why it cannot be bounded.

    With :data:`MIN_REPEATS_T` (5) or more repeats: a Student-t interval over the repeats'
    seconds per sample (window seconds / window samples). With fewer: the method of batch
    means (Law & Kelton, "Simulation Modeling and Analysis", batch means for steady-state
    output) pooled over all measurement windows: about :data:`BATCHES` batches in all, each
    of at least 2 contiguous steps of one window (a batch never crosses a window edge),
    spread over the windows so that batch lengths are as equal as possible, then a t-interval
    over the batches. Batch durations come from :func:`step_spans`, so they add up to the
    window's seconds, the same time base as the throughput. With several ranks, a batch
    lasts as long as its slowest rank and holds the samples of all ranks, as the throughput
    does (:func:`combine_ranks`). With one repeat this is exactly the interval of earlier
    versions. When the windows hold too few steps for 2 batches, 2-4 repeats fall back to
    the t-interval over repeats. The units are :func:`interval_units`'.

    The interval is computed on seconds per sample and inverted. It is :class:`Unbounded`
    (never a range that means nothing) when there are too few steps, or when the lower
    end of the seconds-per-sample interval reaches zero; its ``reason`` gives the fix.
    Work is O(n) in the number of records.
    """
    units = interval_units(steps, windows)
    if isinstance(units, Unbounded):
        return units
    return _point_or_t(units.seconds_per_sample, level, units.method)


def combine_ranks(windows: Sequence[WindowRecord]) -> list[WindowRecord]:
    """One window per (repeat, phase) for all ranks together.

    Global throughput of a distributed run is the total samples of all ranks over
    the slowest rank's window (averaging per-rank rates would be wrong), so a
    combined window has the samples summed, the longest duration and the earliest
    start, and rank 0. With a single rank the windows are returned unchanged.
    """
    if len({w.rank for w in windows}) <= 1:
        return list(windows)
    groups: dict[tuple[int, Phase], list[WindowRecord]] = {}
    for w in windows:
        groups.setdefault((w.repeat, w.phase), []).append(w)
    return [
        WindowRecord(
            repeat=repeat,
            phase=phase,
            start_s=min(w.start_s for w in ws),
            seconds=max(w.seconds for w in ws),
            steps=max(w.steps for w in ws),
            samples=sum(w.samples for w in ws),
        )
        for (repeat, phase), ws in groups.items()
    ]


def step_spans(ms: Sequence[StepRecord], window: WindowRecord) -> list[float]:
    """Wall-clock seconds each step of ``window`` occupies, summing to ``window.seconds``.

    A step spans from its start to the next step's start (the first from the window's
    opening edge, the last to its closing edge), so the time between steps and the
    closing synchronize are counted, exactly as in the window's throughput.

    When every step has a device time (``StepRecord.device_s``: a device timer ran), the
    window's seconds are shared among its steps in proportion to their device times instead.
    On a GPU the host runs ahead of the device (short launches, then one long wait when the
    launch queue is full), so host spans swing from step to step while the device's work
    does not; spans that follow the device keep a batch's length to the work done in it.
    They still sum to ``window.seconds``, so the intervals stay centred on the throughput.
    """
    device = [s.device_s for s in ms if s.device_s is not None]
    total = sum(device)
    if ms and len(device) == len(ms) and total > 0:
        return [window.seconds * d / total for d in device]
    starts = [window.start_s, *(s.start_s for s in ms[1:]), window.start_s + window.seconds]
    return [b - a for a, b in itertools.pairwise(starts)]
