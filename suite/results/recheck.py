"""A stored summary against the one its raw records give: the one comparison that reading a result
(:func:`suite.results.io.check_summary`) and the validator (``suite.validation.record_checks``) share.

The digest is an unkeyed hash anyone can recompute, so a summary is trusted only when
:func:`harness.stats.summarize` gives it again from the step and window records.
"""

from __future__ import annotations

import math
from typing import Any

from harness.stats import Summary

REL_TOL = 1e-9
"""Relative tolerance of a recomputed figure: JSON keeps a float's 17 significant digits, so a
recomputation differs only by summation order."""

RECOMPUTED: tuple[str, ...] = (
    "throughput",
    "measured_samples",
    "measured_seconds",
    "measured_steps",
    "step_time_median_s",
    "step_time_p90_s",
    "step_time_iqr_s",
    "step_time_cv",
    "repeat_spread",
    "repeat_cv",
    "input_bound_fraction",
    "warmup_seconds",
    "first_step_s",
    "host_step_time_median_s",
    "host_step_time_p90_s",
    "host_step_time_cv",
    "device_busy_fraction",
)
"""Every summary figure that follows from the records (the validator compares them all)."""

CORE: tuple[str, ...] = (
    "throughput",
    "measured_samples",
    "measured_seconds",
    "step_time_median_s",
    "input_bound_fraction",
)
"""The figures a score rests on, which reading any result checks (older files may differ in the rest)."""


def _differs(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return (a is None) != (b is None)
    if isinstance(a, str) or isinstance(b, str):
        return bool(a != b)
    return not math.isclose(float(a), float(b), rel_tol=REL_TOL, abs_tol=1e-12)


def summary_differences(
    stored: Summary, again: Summary, names: tuple[str, ...] = RECOMPUTED
) -> list[tuple[str, Any, Any]]:
    """``(field, stored, recomputed)`` of each figure of ``names`` that differs, then the step-time source
    and each repeat's throughput (with :data:`RECOMPUTED`); empty when the stored summary follows."""
    pairs: list[tuple[str, Any, Any]] = [(n, getattr(stored, n), getattr(again, n)) for n in names]
    if names == RECOMPUTED:
        if stored.step_time_source is not None:  # None: written before the device clock existed
            pairs.append(("step_time_source", stored.step_time_source, again.step_time_source))
        if len(stored.repeat_throughputs) != len(again.repeat_throughputs):
            pairs.append(("repeat count", len(stored.repeat_throughputs), len(again.repeat_throughputs)))
        else:
            pairs += [
                (f"repeat_throughputs/{i}", a, b)
                for i, (a, b) in enumerate(zip(stored.repeat_throughputs, again.repeat_throughputs, strict=True))
            ]
    return [(n, a, b) for n, a, b in pairs if _differs(a, b)]
