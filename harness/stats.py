"""Statistics derived from raw records.

Throughput is total samples over total measured seconds, never a mean of per-step
or per-rank rates (averaging rates over-weights fast steps, a known bug in several
peer suites). Confidence intervals live in :mod:`harness.intervals` (computed on
seconds per sample and then inverted, for the same reason).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from harness.intervals import (
    Interval,
    Unbounded,
    combine_ranks,
    group_measured_steps,
    step_spans,
    throughput_interval,
)
from harness.records import Phase, StepRecord, WindowRecord
from harness.steady import SteadyState, check_steady_state

__all__ = [
    "Interval",
    "MeasurementError",
    "Summary",
    "Unbounded",
    "combine_ranks",
    "step_spans",
    "summarize",
    "throughput_interval",
]


class MeasurementError(ValueError):
    """The records cannot give a throughput (no measured samples or no measured time)."""


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
        throughput_ci95: 95% confidence interval of the throughput (samples/s), or None
            when the records cannot bound one (``throughput_ci95_reason`` says why).
        repeat_throughputs: samples/s of each repeat's measurement window.
        repeat_spread: (max - min) / mean of ``repeat_throughputs`` (0 for one repeat).
        repeat_cv: sample CV of ``repeat_throughputs`` (None for one repeat).
        input_bound_fraction: data wait / (data wait + compute) over measured steps.
        warmup_seconds: seconds in all warm-up windows.
        first_step_s: the first warm-up step's time (includes lazy init and compilation);
            the slowest rank's, with several ranks.
        steady_state: trend check of each repeat's measurement window.
        throughput_ci95_rel: half-width of the interval / throughput (0.02 = ±2%), None
            when unbounded.
        throughput_ci95_status: ``"bounded"`` or ``"unbounded"`` (None in older results).
        throughput_ci95_reason: why the interval is unbounded and the fix, e.g. "too few
            repeats to bound ... Fix: raise repeats or measure_steps"; None when bounded.
        step_time_source: ``"device"`` when every measured step has a device time
            (``StepRecord.device_s``, CUDA events on a GPU): then the step-time median, p90,
            IQR and CV, the steady-state test and the interval's batches describe the device;
            ``"host"`` otherwise (data wait + compute, as timed by the host). None in older results.
        host_step_time_median_s: with device step times, the host's median step time (data
            wait + compute: on a GPU mostly launch time), kept apart; None when the step
            times above are already the host's.
        host_step_time_p90_s: likewise, the host's 90th percentile.
        host_step_time_cv: likewise, the host's coefficient of variation.
        device_busy_fraction: with device step times, the device seconds of all measured
            steps / the measured windows' seconds (every rank's own windows), 0-1: the share
            of the wall clock the device spent inside a step. Equivalently, device time per
            step / wall time per step; well below 1 means the device waited between steps.
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
    throughput_ci95_rel: float | None = None
    throughput_ci95_status: str | None = None
    throughput_ci95_reason: str | None = None
    step_time_source: str | None = None
    host_step_time_median_s: float | None = None
    host_step_time_p90_s: float | None = None
    host_step_time_cv: float | None = None
    device_busy_fraction: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def summarize(steps: Sequence[StepRecord], windows: Sequence[WindowRecord]) -> Summary:
    """Derive the summary from raw records.

    Args:
        steps: every step record of the run (warm-up ones too).
        windows: every window record of the run.

    With records of several ranks (a distributed run) the throughput and the
    window-based figures come from :func:`combine_ranks`; step-time statistics
    and the input-bound fraction cover the steps of all ranks.

    Work is O(n) in the number of records plus the bounded steady-state check, so
    20k steps summarize in well under a second.

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
    device = [s.device_s for s in ms if s.device_s is not None]
    on_device = len(device) == len(ms)
    host = _spread([s.step_s for s in ms])
    q25, q50, q75, q90, cv = _spread(device) if on_device else host
    wait = sum(s.data_wait_s for s in ms)
    busy = sum(s.step_s for s in ms)
    per_repeat = [w.samples / w.seconds for w in measured_windows]
    mean_rep = float(np.mean(per_repeat))
    spread = (max(per_repeat) - min(per_repeat)) / mean_rep if len(per_repeat) > 1 else 0.0
    rep_cv = float(np.std(per_repeat, ddof=1) / mean_rep) if len(per_repeat) > 1 else None
    first_steps = [s.step_s for s in steps if s.phase is Phase.WARMUP and s.index == 0 and s.repeat == 0]
    grouped = group_measured_steps(ms)
    ranks = sorted({s.rank for s in ms})
    series = [[_time(s, on_device) for s in grouped.get((w.repeat, r), [])] for w in measured_windows for r in ranks]
    ci = throughput_interval(steps, windows)
    bounded = isinstance(ci, Interval)
    throughput = samples / seconds
    return Summary(
        throughput=throughput,
        measured_samples=samples,
        measured_seconds=seconds,
        measured_steps=len(ms),
        step_time_median_s=q50,
        step_time_p90_s=q90,
        step_time_iqr_s=q75 - q25,
        step_time_cv=cv,
        throughput_ci95=ci if isinstance(ci, Interval) else None,
        repeat_throughputs=per_repeat,
        repeat_spread=spread,
        repeat_cv=rep_cv,
        input_bound_fraction=wait / busy if busy > 0 else 0.0,
        warmup_seconds=sum(w.seconds for w in combined if w.phase is Phase.WARMUP),
        first_step_s=max(first_steps) if first_steps else None,
        steady_state=check_steady_state(series),
        throughput_ci95_rel=_relative_half_width(ci, throughput),
        throughput_ci95_status="bounded" if bounded else "unbounded",
        throughput_ci95_reason=ci.reason if isinstance(ci, Unbounded) else None,
        step_time_source="device" if on_device else "host",
        host_step_time_median_s=host[1] if on_device else None,
        host_step_time_p90_s=host[3] if on_device else None,
        host_step_time_cv=host[4] if on_device else None,
        device_busy_fraction=_busy(device, windows) if on_device else None,
    )


def _time(step: StepRecord, on_device: bool) -> float:
    """The step's time in the summary's source: its device time, or the host's step time."""
    return step.device_s if on_device and step.device_s is not None else step.step_s


def _spread(times: Sequence[float]) -> tuple[float, float, float, float, float]:
    """(p25, median, p75, p90, CV) of step times in seconds; CV is sample std / mean (0 for one step)."""
    st = np.asarray(times, dtype=float)
    q25, q50, q75, q90 = (float(v) for v in np.percentile(st, [25, 50, 75, 90]))
    mean = float(st.mean())
    cv = float(st.std(ddof=1) / mean) if len(st) > 1 and mean > 0 else 0.0
    return q25, q50, q75, q90, cv


def _busy(device: Sequence[float], windows: Sequence[WindowRecord]) -> float | None:
    """Device seconds of the measured steps over the measured windows' seconds, every rank's own."""
    wall = sum(w.seconds for w in windows if w.phase is Phase.MEASUREMENT)
    return sum(device) / wall if wall > 0 else None


def _relative_half_width(ci: Interval | Unbounded, throughput: float) -> float | None:
    """Half-width over the estimate (0.02 = ±2%); None when unbounded."""
    if not isinstance(ci, Interval) or ci.high is None or throughput <= 0:
        return None
    return (ci.high - ci.low) / 2 / throughput
