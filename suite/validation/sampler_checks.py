"""The sampler's readings against the windows, the kernel's CPU counters and the cores the run was allowed.

The sampler (:mod:`harness.procstat`) reads ``/proc/stat`` and the run's process tree every
``sampler_interval_s`` on the rank's own monotonic clock, so its readings and the windows share
one clock, and each reading carries the kernel's own count of the CPU-seconds that passed. A
forger who shortens the windows, or scales the readings' timestamps with them, leaves one of
these relations broken (the tolerances were chosen from the runs measured in
``tests/validation/test_physical.py``'s module docstring):

- readings come at least one interval apart, the first at least one interval after the origin
  (``select`` never wakes early: the measured spacing was 1.002-1.56 intervals);
- the CPU-seconds the machine offered in a reading are its cores times the time since the
  previous reading (the kernel's clock against the sampler's: measured within 0.9996-1.0004 over
  a whole run, and within 0.048 s per core per reading under heavy load);
- the CPU-seconds are whole kernel ticks (USER_HZ = 100 on x86-64 and aarch64 Linux, proc(5));
- the readings end when the timed work does (the last window, or the evaluation and loss-trajectory
  passes after it), up to the input pipeline's teardown: measured 0.04-0.45 s *before* the last
  window's end without loader workers, 5.48 s after it with one DataLoader worker (joined with a
  5 s timeout);
- the run's tree never used more CPU-seconds than the cores it was allowed (its ranks' affinity
  on that host) plus the unbound supervisor's share; measured 0.53-0.90 cores of 2 allowed;
- the per-core utilization accounts for the CPU time of the run, of other processes and of steal
  (measured within 0.02% over a run and 0.02 s per reading): zeroing ``others_cpu_s`` or
  ``steal_s`` to hide a disturbed window leaves the cores busier than anyone was. The check is
  one-sided: where the run's tree counted more ticks in a reading than the machine's busy cores
  (per-process and per-CPU ticks are sampled apart), the sampler clamps others at 0 and the
  reading honestly accounts for more than the cores' busy time.

Every check is linear in the number of readings and windows.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

from harness.records import Phase, WindowRecord
from harness.sampler import UtilizationSample
from suite.results import Result
from suite.validation.findings import Findings
from suite.validation.timestamps import timed_end

INTERVAL_TOL = 0.01
"""Readings may come this fraction of an interval early (float rounding; measured: never early)."""
TICK_S = 0.01
"""One kernel clock tick (1 / USER_HZ, USER_HZ = 100 on x86-64 and aarch64 Linux: proc(5), man 7 time)."""
TICK_ARCHES = ("x86_64", "aarch64")
"""Architectures whose USER_HZ is 100, so that readings must be whole ticks."""
READING_REL_TOL = 0.05
"""Per reading: offered CPU-seconds may differ from cores x interval by this fraction..."""
READING_LAG_S = 0.15
"""...plus this many seconds per core: the sampler stamps a reading after walking the process tree,
so the kernel's interval and the stamps' differ by the walk's time (measured: at most 0.048 s per core,
a 2-rank DDP run at 0.1 s readings on 2 vCPUs under a load average of 7)."""
RUN_REL_TOL = 0.02
"""Over a run: offered CPU-seconds may differ from cores x span by this fraction..."""
RUN_LAG_S = 0.25
"""...plus this many seconds per core (the walk's time at the two ends, and two ticks per core)."""
TEARDOWN_S = 0.5
"""Readings may run on this long (plus one interval) after the last timed work: the rank stops the
sampler in the ``finally`` that ends the run (measured without loader workers: the last reading came
0.04-0.45 s before the end)..."""
LOADER_WORKER_S = 6.0
"""...plus this long per DataLoader worker (``num_workers``): freeing the batch iterator joins each
worker with a 5 s timeout (``torch.utils.data._utils.MP_STATUS_CHECK_INTERVAL``), then terminates it.
Measured: 5.48 s past the end with one worker (mnist-dataheavy, a loaded 2-vCPU Xeon)."""
SUPERVISOR_CORES = 0.25
"""Cores the run's tree may use beyond its ranks' affinity: the supervisor, which is in the tree and
not bound (measured 0.01 cores)."""
BUSY_REL_TOL = 0.005
"""The cores' busy time may differ from the accounted CPU time by this fraction of the offered time...
"""
BUSY_CORES_TOL = 0.1
"""...plus this many cores over the span (per-process and per-CPU ticks differ by a tick or two)."""


FIX = "submit the result as trainbench wrote it; re-run if the measurement was wrong"


def _bad(findings: Findings, code: str, where: str, message: str) -> None:
    findings.error(code, where, message, FIX)


def _cores(reading: UtilizationSample) -> int:
    return len(reading.cpu_percent)


def _allowed_cores(result: Result, ranks: set[int], system: dict[str, Any]) -> int | None:
    """CPUs the ranks ``ranks`` (on one host) were allowed, read back by each rank; None when unrecorded."""
    entries = [r for r in result.environment.get("ranks") or [] if isinstance(r, dict) and r.get("rank") in ranks]
    bindings = [system.get("binding")] + [r.get("binding") for r in entries]
    cpus: set[int] = set()
    for b in bindings:
        allowed = b.get("cpus_allowed") if isinstance(b, dict) else None
        if isinstance(allowed, list):
            cpus.update(c for c in allowed if isinstance(c, int))
    return len(cpus) or None


def _spacing(readings: Sequence[UtilizationSample], interval: float, where: str, findings: Findings) -> None:
    low = interval * (1 - INTERVAL_TOL)
    if readings[0].t_s < low:
        _bad(
            findings,
            "clock-mismatch",
            f"{where}/0",
            f"the first reading is stamped {readings[0].t_s:.3f} s after the run's origin, but the sampler "
            f"starts at the origin and reads every {interval:g} s: the readings' timestamps were edited",
        )
        return
    for k in range(1, len(readings)):
        gap = readings[k].t_s - readings[k - 1].t_s
        # the last reading is taken when the sampler is stopped (harness.procstat), so it may come early
        if gap < low and not (k == len(readings) - 1 and gap >= 0):
            _bad(
                findings,
                "clock-mismatch",
                f"{where}/{k}",
                f"readings {k - 1} and {k} are {gap:.3f} s apart, but the sampler reads every {interval:g} s and "
                "never early: the readings' timestamps were edited (scaled, shifted or reordered)",
            )
            return


def _ticks(readings: Sequence[UtilizationSample], where: str, findings: Findings) -> None:
    for k, r in enumerate(readings):
        for name in ("machine_cpu_s", "run_cpu_s", "others_cpu_s", "steal_s"):
            value = getattr(r, name)
            ticks = value / TICK_S if value is not None else 0.0
            if not math.isfinite(ticks) or abs(ticks - round(ticks)) > 1e-6:
                _bad(
                    findings,
                    "clock-mismatch",
                    f"{where}/{k}/{name}",
                    f"{name} = {value!r} s is not a whole number of kernel clock ticks ({TICK_S} s): the kernel "
                    "counts CPU time in ticks, so this reading was scaled after the sampler wrote it",
                )
                return


def _offered(readings: Sequence[UtilizationSample], where: str, findings: Findings) -> None:
    """The machine's CPU-seconds per reading and over the run against cores x the readings' clock."""
    offered = expected = 0.0
    for k in range(1, len(readings)):
        r, gap = readings[k], readings[k].t_s - readings[k - 1].t_s
        if r.machine_cpu_s is None:
            continue
        n, want = _cores(r), _cores(r) * gap
        offered, expected = offered + r.machine_cpu_s, expected + want
        if abs(r.machine_cpu_s - want) > n * (READING_REL_TOL * gap + READING_LAG_S):
            _bad(
                findings,
                "clock-mismatch",
                f"{where}/{k}/machine_cpu_s",
                f"the kernel counted {r.machine_cpu_s:.2f} CPU-seconds between readings {k - 1} and {k}, which are "
                f"stamped {gap:.3f} s apart: {r.machine_cpu_s / gap if gap > 0 else math.inf:.2f} cores' worth on a "
                f"{n}-core machine. The readings' clock and the kernel's disagree (timestamps scaled or readings "
                "removed)",
            )
            return
    n = max(_cores(r) for r in readings)
    if expected > 0 and abs(offered - expected) > RUN_REL_TOL * expected + n * RUN_LAG_S:
        _bad(
            findings,
            "clock-mismatch",
            f"{where}",
            f"over the readings the kernel counted {offered:.1f} CPU-seconds, but {n} cores over their "
            f"{expected / n:.1f} s of timestamps offer {expected:.1f} (ratio {offered / expected:.3f}): the "
            "readings' clock and the kernel's disagree",
        )


def _run_time(readings: Sequence[UtilizationSample], allowed: int | None, where: str, findings: Findings) -> None:
    """The run's CPU-seconds against the cores it was allowed, over the readings' span."""
    known = [r for r in readings[1:] if r.run_cpu_s is not None]
    if not known or allowed is None:
        return
    span = readings[-1].t_s - readings[0].t_s
    used = sum(r.run_cpu_s or 0.0 for r in known)
    cap = min(allowed + SUPERVISOR_CORES, float(max(_cores(r) for r in known)))
    limit = cap * span * (1 + RUN_REL_TOL) + max(_cores(r) for r in known) * RUN_LAG_S
    if span > 0 and used > limit:
        _bad(
            findings,
            "cpu-time-impossible",
            f"{where}",
            f"the run's processes used {used:.1f} CPU-seconds in {span:.1f} s ({used / span:.2f} cores), but it was "
            f"allowed {allowed} core(s) (its ranks' affinity) on a {max(_cores(r) for r in known)}-core machine: "
            "more CPU time than the cores hold",
        )


def _busy(readings: Sequence[UtilizationSample], windows: Sequence[WindowRecord], where: str, found: Findings) -> None:
    """Per measurement window: the cores' utilization against the run's, others' and stolen CPU time."""
    spans = sorted((w.start_s, w.start_s + w.seconds) for w in windows if w.phase is Phase.MEASUREMENT)
    for start, end in spans:
        inside = [
            r
            for r in readings
            if start < r.t_s <= end and None not in (r.machine_cpu_s, r.run_cpu_s, r.others_cpu_s, r.steal_s)
        ]
        if not inside:
            continue
        offered = sum(r.machine_cpu_s or 0.0 for r in inside)
        busy = sum(sum(r.cpu_percent) / 100 / max(1, _cores(r)) * (r.machine_cpu_s or 0.0) for r in inside)
        accounted = sum((r.run_cpu_s or 0.0) + (r.others_cpu_s or 0.0) + (r.steal_s or 0.0) for r in inside)
        wall = offered / max(1, _cores(inside[0]))
        # one-sided: the sampler clamps others at 0 where the tree's own counters ran ahead of the machine's
        # (harness.procstat), so honest readings account for more than the cores' busy time, never for less;
        # hiding interference removes CPU time and leaves the cores busier than anyone was
        if busy - accounted > BUSY_REL_TOL * offered + BUSY_CORES_TOL * wall + 2 * TICK_S * _cores(inside[0]):
            _bad(
                found,
                "interference-hidden",
                f"{where}",
                f"in the measurement window [{start:.1f}, {end:.1f}] s the cores were busy {busy:.2f} CPU-seconds "
                f"(per-core utilization), but the run, other processes and steal account for {accounted:.2f}: "
                "other processes' CPU time or steal was removed from the readings",
            )
            return


def check_readings(
    result: Result,
    readings: Sequence[UtilizationSample],
    rank: int,
    system: dict[str, Any],
    where: str,
    findings: Findings,
    ranks_here: set[int] | None = None,
) -> None:
    """One host's readings (its sampler ran in global rank ``rank``) against that rank's windows.

    Args:
        result: the result (config, windows, the ranks' bindings, the evaluation pass).
        readings: the sampler's readings, in order, on rank ``rank``'s clock.
        rank: the global rank whose sampler took them (0, or a node's lowest rank).
        system: that host's system description (``environment``, or a node's ``system``).
        where: the readings' location, e.g. ``results/x.json#utilization``.
        findings: where findings go.
        ranks_here: the global ranks on that host (default: all ranks of a one-host run).
    """
    windows = [w for w in result.windows if w.rank == rank]
    if not readings or not windows:
        return
    interval = result.config.windows.sampler_interval_s
    _spacing(readings, interval, where, findings)
    arch = str((system.get("isa") or {}).get("arch") or (system.get("cpu") or {}).get("arch") or "").lower()
    if arch in TICK_ARCHES:
        _ticks(readings, where, findings)
    _offered(readings, where, findings)
    end = timed_end(windows, result.workload_info if rank == 0 else None)
    last = readings[-1].t_s
    workers = result.config.params.get("num_workers")
    teardown = TEARDOWN_S + LOADER_WORKER_S * (workers if isinstance(workers, int) and workers > 0 else 0)
    if last > end + interval + teardown:
        _bad(
            findings,
            "clock-mismatch",
            f"{where}/{len(readings) - 1}",
            f"the sampler's readings run {last - end:.1f} s past the last timed work (windows and the passes "
            f"after them end at {end:.1f} s), but the rank stops its sampler once that work ends and its input "
            f"pipeline is torn down (at most {teardown + interval:.1f} s): the windows were shortened",
        )
    widest = max((b.t_s - a.t_s for a, b in itertools.pairwise(readings)), default=interval)
    if last < max(w.start_s + w.seconds for w in windows) - widest - TEARDOWN_S:
        findings.warning(
            "clock-mismatch",
            f"{where}/{len(readings) - 1}",
            f"the sampler's readings stop at {last:.1f} s, before the windows end: the windows were lengthened, "
            "or the sampler stopped early",
            "re-run; if the sampler stops early on this machine, report it",
        )
    here = ranks_here if ranks_here is not None else set(range(result.world_size))
    _run_time(readings, _allowed_cores(result, here, system), where, findings)
    _busy(readings, windows, where, findings)


def check_sampler(result: Result, where: str, findings: Findings) -> None:
    """Every host's readings: rank 0's (``utilization``), and each other node's of a multi-node run."""
    nodes = result.nodes.nodes if result.nodes is not None else []
    rank0_node = next((n for n in nodes if 0 in n.ranks), None)
    here = set(rank0_node.ranks) if rank0_node is not None else None
    check_readings(result, result.utilization, 0, result.environment, f"{where}#utilization", findings, here)
    for i, node in enumerate(nodes):
        if node is rank0_node or not node.ranks:
            continue
        at = f"{where}#nodes/nodes/{i}/utilization"
        check_readings(result, node.utilization, min(node.ranks), node.system, at, findings, set(node.ranks))
