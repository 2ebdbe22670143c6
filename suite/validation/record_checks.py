"""Checks of a result's raw records, for every world size: records agree with each other and with the
config, timestamps are monotonic, windows honour their minimums and never overlap, and the stored
summary follows from the records.

A distributed run keeps each rank's records: a window per (rank, repeat, phase) and the steps
of every rank. The global summary follows from them by the rule of
:func:`harness.stats.summarize`: total samples of all ranks over the slowest rank's window
(:func:`harness.intervals.combine_ranks`). Every check here is linear in the number of records.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict

from harness.records import Phase, StepRecord, WindowRecord
from harness.stats import MeasurementError, summarize
from suite.results import Result
from suite.results.recheck import summary_differences
from suite.validation.findings import Findings

TIME_TOL_S = 1e-6
"""Slack, in seconds, when comparing timestamps (the harness rounds nothing; this absorbs float sums)."""
Key = tuple[int, int, Phase]
"""(rank, repeat, phase)."""


def _where_of(key: Key, world_size: int) -> str:
    rank, repeat, phase = key
    return f"{f'rank {rank} ' if world_size > 1 else ''}repeat {repeat} {phase.value}"


def _bad(findings: Findings, where: str, message: str, code: str = "records") -> bool:
    findings.error(code, where, message, "submit the result as trainbench wrote it")
    return False


def _window_minimums(result: Result, where: str, windows: dict[Key, WindowRecord], findings: Findings) -> bool:
    ok = True
    w = result.config.windows
    ranks = sorted({k[0] for k in windows}) or [0]
    for rank in ranks:
        for r in range(w.repeats):
            label = _where_of((rank, r, Phase.WARMUP), result.world_size).rsplit(" ", 1)[0]
            warm, meas = windows.get((rank, r, Phase.WARMUP)), windows.get((rank, r, Phase.MEASUREMENT))
            if warm is None or warm.steps < 1:
                findings.error(
                    "warmup-empty",
                    f"{where}#windows",
                    f"{label} has no warm-up step",
                    "every repeat needs a warm-up window of at least one step; re-run",
                )
            elif warm.steps < w.warmup_steps or warm.seconds < w.warmup_seconds:
                findings.error(
                    "windows-not-honoured",
                    f"{where}#windows",
                    f"{label}: warm-up of {warm.steps} steps / {warm.seconds:.3f} s is shorter than the config's "
                    f"{w.warmup_steps} steps / {w.warmup_seconds} s",
                    "re-run; the harness never ends a window early",
                )
            if meas is None:
                findings.error(
                    "windows-not-honoured",
                    f"{where}#windows",
                    f"{label} has no measurement window",
                    "re-run the workload to completion",
                )
                ok = False
            elif meas.steps < w.measure_steps or meas.seconds < w.measure_seconds:
                findings.error(
                    "windows-not-honoured",
                    f"{where}#windows",
                    f"{label}: measurement of {meas.steps} steps / {meas.seconds:.3f} s is shorter than the "
                    f"config's {w.measure_steps} steps / {w.measure_seconds} s",
                    "re-run; the harness never ends a window early",
                )
    extra = sorted({k[1] for k in windows if k[1] >= w.repeats or k[1] < 0})
    if extra:
        ok = _bad(findings, f"{where}#windows", f"windows for repeats {extra} beyond the config's {w.repeats}")
    return ok


def _ranks_ok(result: Result, where: str, windows: dict[Key, WindowRecord], findings: Findings) -> bool:
    ranks = {k[0] for k in windows}
    step_ranks = {s.rank for s in result.steps}
    # ranks 0..world_size-1 exactly, checked without building the range (a forged world size may be 10**18)
    if ranks and (len(ranks) != result.world_size or min(ranks) != 0 or max(ranks) != result.world_size - 1):
        return _bad(
            findings, f"{where}#windows", f"windows of ranks {sorted(ranks)[:8]} for world size {result.world_size}"
        )
    if not step_ranks <= ranks:
        return _bad(findings, f"{where}#steps", f"steps of ranks {sorted(step_ranks - ranks)[:8]} without windows")
    return True


def _overlaps(result: Result, where: str, findings: Findings) -> bool:
    """Each rank's windows follow one another: none starts before the previous one ended."""
    by_rank: dict[int, list[WindowRecord]] = defaultdict(list)
    for win in result.windows:
        by_rank[win.rank].append(win)
    for wins in by_rank.values():
        wins.sort(key=lambda x: x.start_s)
        for a, b in itertools.pairwise(wins):
            if b.start_s < a.start_s + a.seconds - TIME_TOL_S:
                key = (b.rank, b.repeat, b.phase)
                return _bad(
                    findings,
                    f"{where}#windows",
                    f"{_where_of(key, result.world_size)} starts at {b.start_s:.6f} s, before the previous window "
                    f"ended at {a.start_s + a.seconds:.6f} s: windows must not overlap",
                )
    return True


def _steps_ok(key: Key, members: list[StepRecord], win: WindowRecord, ctx: tuple[str, Result, Findings]) -> bool:
    """A window's steps: counts, samples and time agree with it; indices 0..n-1; starts monotonic, inside it."""
    where, result, findings = ctx
    label = _where_of(key, result.world_size)
    if len(members) != win.steps or sum(s.samples for s in members) != win.samples:
        return _bad(
            findings,
            f"{where}#windows",
            f"{label}: the window says {win.steps} steps / {win.samples} samples, the step records hold "
            f"{len(members)} / {sum(s.samples for s in members)}",
        )
    busy = sum(s.step_s for s in members)
    device = sum(s.device_s or 0.0 for s in members)  # one stream runs the steps one after another
    for what, took in (("steps", busy), ("steps' device times", device)):
        if took > win.seconds * (1 + 1e-6) + TIME_TOL_S:
            return _bad(
                findings,
                f"{where}#windows",
                f"{label}: its {what} take {took:.6f} s, longer than the window's {win.seconds:.6f} s",
            )
    end = win.start_s + win.seconds + TIME_TOL_S
    previous = win.start_s - TIME_TOL_S
    for i, s in enumerate(members):
        if s.index != i:
            return _bad(findings, f"{where}#steps", f"{label}: step {i} is recorded with index {s.index}")
        if s.start_s < previous or s.start_s > end:
            return _bad(
                findings,
                f"{where}#steps",
                f"{label}: step {i} starts at {s.start_s:.6f} s, out of order or outside its window "
                f"[{win.start_s:.6f}, {win.start_s + win.seconds:.6f}] s: timestamps must be monotonic"
                + (f", and after step {i - 1} ended" if i else ""),
            )
        previous = s.start_s + s.step_s - TIME_TOL_S  # one step at a time: the next starts after this one ends
    if members and previous > end:
        return _bad(
            findings,
            f"{where}#steps",
            f"{label}: its last step ends at {previous + TIME_TOL_S:.6f} s, after its window "
            f"[{win.start_s:.6f}, {win.start_s + win.seconds:.6f}] s: a window closes after its last step",
        )
    return True


def check_records(result: Result, where: str, findings: Findings) -> bool:
    """Raw records agree with each other and with the config, for any world size.

    Windows are unique per (rank, repeat, phase), every rank of the world has them, each
    rank's windows do not overlap, every window honours the config's minimums, its steps
    match its counts and lie inside it with indices 0..n-1, one after another (a step starts
    after the previous one ended, and the last ends before its window does).
    Returns True when the records are consistent enough to recompute the summary.
    """
    windows: dict[Key, WindowRecord] = {}
    ok = True
    for win in result.windows:
        key = (win.rank, win.repeat, win.phase)
        if key in windows:
            ok = _bad(findings, f"{where}#windows", f"two windows of {_where_of(key, result.world_size)}")
        windows[key] = win
    ok = _ranks_ok(result, where, windows, findings) and ok
    ok = _window_minimums(result, where, windows, findings) and ok
    ok = _overlaps(result, where, findings) and ok
    steps: dict[Key, list[StepRecord]] = defaultdict(list)
    for s in result.steps:
        steps[(s.rank, s.repeat, s.phase)].append(s)
    for key, win in windows.items():
        ok = _steps_ok(key, steps.get(key, []), win, (where, result, findings)) and ok
    for key in steps.keys() - windows.keys():
        ok = _bad(findings, f"{where}#steps", f"step records of {_where_of(key, result.world_size)} have no window")
    batch = result.config.params.get("batch_size")
    per_rank = result.workload_info.get("per_rank_batch_size", batch if result.world_size == 1 else None)
    for i, s in enumerate(result.steps):
        if s.data_wait_s < 0 or s.compute_s < 0 or s.samples <= 0 or (s.device_s is not None and s.device_s < 0):
            return _bad(findings, f"{where}#steps/{i}", "a step with negative time or no samples")
        if isinstance(per_rank, int) and s.samples > per_rank:
            return _bad(findings, f"{where}#steps/{i}", f"a step of {s.samples} samples with a batch of {per_rank}")
    return ok


def check_summary(result: Result, where: str, findings: Findings, records_ok: bool) -> None:
    """The stored summary equals the one recomputed from the raw records, for every world size.

    The digest is an unkeyed hash anyone can recompute, so an edited summary with a
    fresh digest is caught here: each figure is recomputed by
    :func:`harness.stats.summarize` and a difference is an error naming the field, the
    stored and the recomputed value.
    """
    s = result.summary
    if s is None:
        findings.error(
            "incomplete", f"{where}#summary", "a complete result without a summary", "submit it as trainbench wrote it"
        )
        return
    if not (math.isfinite(s.throughput) and s.throughput > 0):
        findings.error(
            "throughput-invalid",
            f"{where}#summary/throughput",
            f"throughput {s.throughput!r} samples/s is not a positive number",
            "a valid run measures a positive throughput; re-run",
        )
    if not records_ok:
        return
    try:
        again = summarize(result.steps, result.windows)
    except MeasurementError as exc:
        findings.error(
            "records", f"{where}#windows", f"no throughput follows from the records: {exc}", "re-run the workload"
        )
        return
    for name, stored, recomputed in summary_differences(s, again):
        findings.error(
            "summary-mismatch",
            f"{where}#summary/{name}",
            f"{name} is stored as {stored!r} but the raw records give {recomputed!r}",
            "submit the result as trainbench wrote it; the summary must follow from the step records",
        )
    if (s.steady_state.status == "trending") != (again.steady_state.status == "trending"):
        # Only the decided verdict is compared: "steady" files written before the "undetermined"
        # status existed (schema v1) are not forgeries when today's stricter test cannot decide.
        findings.error(
            "summary-mismatch",
            f"{where}#summary/steady_state",
            f"steady state is stored as {s.steady_state.status!r}, the records give {again.steady_state.status!r}",
            "submit the result as trainbench wrote it",
        )
