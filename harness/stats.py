"""Statistics derived from raw records.

Throughput is total samples over total measured seconds, never a mean of per-step
or per-rank rates (averaging rates over-weights fast steps, a known bug in several
peer suites). Confidence intervals are computed on seconds per sample and then
inverted, for the same reason.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import stats as sps

from harness.records import Phase, StepRecord, WindowRecord
from harness.steady import SteadyState, check_steady_state


class MeasurementError(ValueError):
    """The records cannot give a throughput (no measured samples or no measured time)."""


@dataclass(frozen=True)
class Interval:
    """A two-sided confidence interval.

    Attributes:
        low: lower bound (same unit as the estimate).
        high: upper bound, or None when the interval is unbounded above (the
            seconds-per-sample interval reaches zero).
        level: confidence level, e.g. 0.95.
        method: how it was computed, in words.
    """

    low: float
    high: float | None
    level: float
    method: str


@dataclass(frozen=True)
class Summary:
    """The derived statistics of one measurement.

    Attributes:
        throughput: samples/s = measured samples / measured seconds (window edges).
        measured_samples: samples in all measurement windows.
        measured_seconds: seconds in all measurement windows.
        measured_steps: steps in all measurement windows.
        step_time_median_s: median step time (data wait + compute), seconds.
        step_time_p90_s: 90th percentile step time, seconds.
        step_time_iqr_s: interquartile range of step time, seconds.
        step_time_cv: coefficient of variation of step time (sample std / mean).
        throughput_ci95: 95% confidence interval of the throughput, or None when
            there are too few steps or repeats to compute one.
        repeat_throughputs: samples/s of each repeat's measurement window.
        repeat_spread: (max - min) / mean of ``repeat_throughputs`` (0 for one repeat).
        repeat_cv: sample CV of ``repeat_throughputs`` (None for one repeat).
        input_bound_fraction: data wait / (data wait + compute) over measured steps.
        warmup_seconds: seconds in all warm-up windows.
        first_step_s: the first warm-up step's time (includes lazy init and compilation);
            the slowest rank's, with several ranks.
        steady_state: trend check of each repeat's measurement window.
    """

    throughput: float
    measured_samples: int
    measured_seconds: float
    measured_steps: int
    step_time_median_s: float
    step_time_p90_s: float
    step_time_iqr_s: float
    step_time_cv: float
    throughput_ci95: Interval | None
    repeat_throughputs: list[float]
    repeat_spread: float
    repeat_cv: float | None
    input_bound_fraction: float
    warmup_seconds: float
    first_step_s: float | None
    steady_state: SteadyState

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def _t_interval_inverted(seconds_per_sample: Sequence[float], level: float, method: str) -> Interval:
    """t-interval on seconds/sample, inverted into samples/s."""
    x = np.asarray(seconds_per_sample, dtype=float)
    n = len(x)
    mean = float(x.mean())
    half = float(sps.t.ppf(0.5 + level / 2, n - 1) * x.std(ddof=1) / math.sqrt(n))
    low_tps, high_tps = mean - half, mean + half
    high = 1.0 / low_tps if low_tps > 0 else None
    return Interval(low=1.0 / high_tps, high=high, level=level, method=method)


def throughput_interval(
    steps: Sequence[StepRecord], windows: Sequence[WindowRecord], level: float = 0.95
) -> Interval | None:
    """Confidence interval of the throughput.

    With two or more repeats: a Student-t interval over the repeats' seconds per
    sample (window seconds / window samples). With one repeat: the method of batch
    means (Law & Kelton, "Simulation Modeling and Analysis", batch means for
    steady-state output), splitting all measured steps into up to 10 contiguous
    batches of at least 2 steps (sizes differ by at most one), which tolerates the
    autocorrelation of neighbouring steps better than treating steps as
    independent. Batch durations come from :func:`step_spans`, so they add up to
    the window's seconds, the same time base as the throughput. With several ranks,
    a batch lasts as long as its slowest rank and holds the samples of all ranks,
    as the throughput does (:func:`combine_ranks`).

    Returns None when there are fewer than 2 repeats and fewer than 4 measured steps.
    """
    measured = [w for w in combine_ranks(windows) if w.phase is Phase.MEASUREMENT]
    if len(measured) >= 2:
        per_repeat = [w.seconds / w.samples for w in measured]
        if len(set(per_repeat)) == 1:
            t = 1.0 / per_repeat[0]
            return Interval(t, t, level, f"t-interval over {len(measured)} repeats")
        return _t_interval_inverted(per_repeat, level, f"t-interval over {len(measured)} repeats")
    raw = [w for w in windows if w.phase is Phase.MEASUREMENT]
    by_rank = {w.rank: w for w in raw}
    if not by_rank:
        return None
    series = {
        r: sorted((s for s in steps if s.phase is Phase.MEASUREMENT and s.rank == r), key=lambda s: s.index)
        for r in by_rank
    }
    n = min(len(v) for v in series.values())
    if n < 4:
        return None
    spans = {r: step_spans(series[r], by_rank[r]) for r in by_rank}
    k = min(10, n // 2)
    batches = np.array_split(np.arange(n), k)
    per_batch = [
        max(sum(spans[r][i] for i in b) for r in by_rank) / sum(series[r][i].samples for r in by_rank for i in b)
        for b in batches
    ]
    lo, hi = len(batches[-1]), len(batches[0])
    method = f"batch means, {k} batches of {lo if lo == hi else f'{lo}-{hi}'} steps"
    if len(set(per_batch)) == 1:
        t = 1.0 / per_batch[0]
        return Interval(t, t, level, method)
    return _t_interval_inverted(per_batch, level, method)


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
    """
    starts = [window.start_s, *(s.start_s for s in ms[1:]), window.start_s + window.seconds]
    return [b - a for a, b in itertools.pairwise(starts)]


def summarize(steps: Sequence[StepRecord], windows: Sequence[WindowRecord]) -> Summary:
    """Derive the summary from raw records.

    Args:
        steps: every step record of the run (warm-up ones too).
        windows: every window record of the run.

    With records of several ranks (a distributed run) the throughput and the
    window-based figures come from :func:`combine_ranks`; step-time statistics
    and the input-bound fraction cover the steps of all ranks.

    Raises:
        MeasurementError: no measurement window, or zero measured samples or seconds.
            A throughput is never reported as 0 for a run that measured nothing.
    """
    combined = combine_ranks(windows)
    measured_windows = [w for w in combined if w.phase is Phase.MEASUREMENT]
    if not measured_windows:
        raise MeasurementError("no measurement window was recorded; the run measured nothing")
    for w in measured_windows:
        if w.samples <= 0 or w.seconds <= 0:
            raise MeasurementError(
                f"the measurement window of repeat {w.repeat} holds {w.samples} samples in {w.seconds} s; "
                "no throughput can be computed from it"
            )
    samples = sum(w.samples for w in measured_windows)
    seconds = sum(w.seconds for w in measured_windows)
    ms = [s for s in steps if s.phase is Phase.MEASUREMENT]
    if not ms:
        raise MeasurementError("no measured step records")
    st = np.array([s.step_s for s in ms], dtype=float)
    q25, q50, q75, q90 = (float(v) for v in np.percentile(st, [25, 50, 75, 90]))
    mean = float(st.mean())
    cv = float(st.std(ddof=1) / mean) if len(st) > 1 and mean > 0 else 0.0
    wait = sum(s.data_wait_s for s in ms)
    busy = sum(s.step_s for s in ms)
    per_repeat = [w.samples / w.seconds for w in measured_windows]
    mean_rep = float(np.mean(per_repeat))
    spread = (max(per_repeat) - min(per_repeat)) / mean_rep if len(per_repeat) > 1 else 0.0
    rep_cv = float(np.std(per_repeat, ddof=1) / mean_rep) if len(per_repeat) > 1 else None
    first_steps = [s.step_s for s in steps if s.phase is Phase.WARMUP and s.index == 0 and s.repeat == 0]
    series = [
        [s.step_s for s in ms if s.repeat == w.repeat and s.rank == r]
        for w in measured_windows
        for r in sorted({s.rank for s in ms})
    ]
    return Summary(
        throughput=samples / seconds,
        measured_samples=samples,
        measured_seconds=seconds,
        measured_steps=len(ms),
        step_time_median_s=q50,
        step_time_p90_s=q90,
        step_time_iqr_s=q75 - q25,
        step_time_cv=cv,
        throughput_ci95=throughput_interval(steps, windows),
        repeat_throughputs=per_repeat,
        repeat_spread=spread,
        repeat_cv=rep_cv,
        input_bound_fraction=wait / busy if busy > 0 else 0.0,
        warmup_seconds=sum(w.seconds for w in combined if w.phase is Phase.WARMUP),
        first_step_s=max(first_steps) if first_steps else None,
        steady_state=check_steady_state(series),
    )
