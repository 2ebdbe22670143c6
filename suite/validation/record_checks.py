"""Checks of a result's raw records: records agree with each other and with the config, windows
honour their minimums, and the stored summary follows from the records."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from harness.records import Phase
from harness.stats import MeasurementError, summarize
from suite.results import Result
from suite.validation.findings import Findings

REL_TOL = 1e-9
"""Relative tolerance when comparing a stored statistic with its recomputed value."""


def check_records(result: Result, where: str, findings: Findings) -> bool:
    """Raw records agree with each other and with the config; windows honour their minimums.

    Returns True when the records are consistent enough to recompute the summary.
    """
    ok = True
    w = result.config.windows
    windows = {(win.repeat, win.phase): win for win in result.windows}
    if len(windows) != len(result.windows):
        findings.error(
            "records",
            f"{where}#windows",
            "two windows share a repeat and phase",
            "submit the result as trainbench wrote it",
        )
        ok = False
    steps: dict[tuple[int, Phase], list[Any]] = defaultdict(list)
    for s in result.steps:
        steps[(s.repeat, s.phase)].append(s)
    for r in range(w.repeats):
        warm, meas = windows.get((r, Phase.WARMUP)), windows.get((r, Phase.MEASUREMENT))
        if warm is None or warm.steps < 1:
            findings.error(
                "warmup-empty",
                f"{where}#windows",
                f"repeat {r} has no warm-up step",
                "every repeat needs a warm-up window of at least one step; re-run",
            )
        elif warm.steps < w.warmup_steps or warm.seconds < w.warmup_seconds:
            findings.error(
                "windows-not-honoured",
                f"{where}#windows",
                f"repeat {r}: warm-up of {warm.steps} steps / {warm.seconds:.3f} s is shorter than the config's "
                f"{w.warmup_steps} steps / {w.warmup_seconds} s",
                "re-run; the harness never ends a window early",
            )
        if meas is None:
            findings.error(
                "windows-not-honoured",
                f"{where}#windows",
                f"repeat {r} has no measurement window",
                "re-run the workload to completion",
            )
            ok = False
        elif meas.steps < w.measure_steps or meas.seconds < w.measure_seconds:
            findings.error(
                "windows-not-honoured",
                f"{where}#windows",
                f"repeat {r}: measurement of {meas.steps} steps / {meas.seconds:.3f} s is shorter than the config's "
                f"{w.measure_steps} steps / {w.measure_seconds} s",
                "re-run; the harness never ends a window early",
            )
    extra = sorted({k[0] for k in windows if k[0] >= w.repeats or k[0] < 0})
    if extra:
        findings.error(
            "records",
            f"{where}#windows",
            f"windows for repeats {extra} beyond the config's {w.repeats}",
            "submit the result as trainbench wrote it",
        )
        ok = False
    batch = result.config.params.get("batch_size")
    for key, win in windows.items():
        members = steps.get(key, [])
        label = f"repeat {key[0]} {key[1].value}"
        if len(members) != win.steps or sum(s.samples for s in members) != win.samples:
            findings.error(
                "records",
                f"{where}#windows",
                f"{label}: the window says {win.steps} steps / {win.samples} samples, the step records hold "
                f"{len(members)} / {sum(s.samples for s in members)}",
                "submit the result as trainbench wrote it",
            )
            ok = False
        busy = sum(s.step_s for s in members)
        if busy > win.seconds * (1 + 1e-6) + 1e-6:
            findings.error(
                "records",
                f"{where}#windows",
                f"{label}: its steps take {busy:.6f} s, longer than the window's {win.seconds:.6f} s",
                "submit the result as trainbench wrote it",
            )
            ok = False
    for key in steps.keys() - windows.keys():
        findings.error(
            "records",
            f"{where}#steps",
            f"step records for repeat {key[0]} {key[1].value} have no window",
            "submit the result as trainbench wrote it",
        )
        ok = False
    for i, s in enumerate(result.steps):
        if s.data_wait_s < 0 or s.compute_s < 0 or s.samples <= 0:
            findings.error(
                "records",
                f"{where}#steps/{i}",
                "a step with negative time or no samples",
                "submit the result as trainbench wrote it",
            )
            ok = False
            break
        if result.world_size == 1 and isinstance(batch, int) and s.samples > batch:
            findings.error(
                "records",
                f"{where}#steps/{i}",
                f"a step of {s.samples} samples with batch_size {batch}",
                "submit the result as trainbench wrote it",
            )
            ok = False
            break
    return ok


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-12)


def check_summary(result: Result, where: str, findings: Findings, records_ok: bool) -> None:
    """The stored throughput is positive and equals the one recomputed from the raw records.

    The digest is an unkeyed hash anyone can recompute, so an edited summary with a
    fresh digest is caught here: the summary must follow from the raw records.
    """
    s = result.summary
    if s is None:
        findings.error(
            "incomplete",
            f"{where}#summary",
            "a complete result without a summary",
            "submit the result as trainbench wrote it",
        )
        return
    if not (math.isfinite(s.throughput) and s.throughput > 0):
        findings.error(
            "throughput-invalid",
            f"{where}#summary/throughput",
            f"throughput {s.throughput!r} samples/s is not a positive number",
            "a valid run measures a positive throughput; re-run",
        )
    if not records_ok or result.world_size != 1:
        return
    try:
        again = summarize(result.steps, result.windows)
    except MeasurementError as exc:
        findings.error(
            "records", f"{where}#windows", f"no throughput follows from the records: {exc}", "re-run the workload"
        )
        return
    pairs: list[tuple[str, float, float]] = [
        ("throughput", s.throughput, again.throughput),
        ("measured_samples", s.measured_samples, again.measured_samples),
        ("measured_seconds", s.measured_seconds, again.measured_seconds),
        ("measured_steps", s.measured_steps, again.measured_steps),
        ("step_time_median_s", s.step_time_median_s, again.step_time_median_s),
    ]
    if len(s.repeat_throughputs) != len(again.repeat_throughputs):
        pairs.append(("repeat count", len(s.repeat_throughputs), len(again.repeat_throughputs)))
    else:
        pairs += [
            (f"repeat_throughputs/{i}", a, b)
            for i, (a, b) in enumerate(zip(s.repeat_throughputs, again.repeat_throughputs, strict=True))
        ]
    for name, stored, recomputed in pairs:
        if not _close(float(stored), float(recomputed)):
            findings.error(
                "summary-mismatch",
                f"{where}#summary/{name}",
                f"{name} is {stored!r} but the raw records give {recomputed!r}",
                "submit the result as trainbench wrote it; the summary must follow from the step records",
            )
    if (s.steady_state.status == "trending") != (again.steady_state.status == "trending"):
        # Only the decided verdict is compared: "steady" files written before the "undetermined"
        # status existed (schema v1) are not forgeries when today's stricter test cannot decide.
        findings.error(
            "summary-mismatch",
            f"{where}#summary/steady_state",
            f"steady state says {s.steady_state.status!r}, the records give {again.steady_state.status!r}",
            "submit the result as trainbench wrote it",
        )
