"""The honest comparison of a data-parallel run: one process on the same cores, same global batch.

Scaling efficiency = DDP throughput / single-process throughput (1.0 = no gain, as
the seed study found for DDP over two NUMA nodes). Its interval propagates both 95%
intervals to first order on the log scale (delta method), treating the two measurements
as independent: ``eff x exp(+-sqrt(r_ddp^2 + r_single^2))`` with ``r = half-width /
estimate``. When a side's interval is unbounded, so is the efficiency's, and the result
says why instead of printing a range that means nothing. Both runs use the same CPUs and
the same global batch, so an efficiency above 1 beyond its interval means one of them was
disturbed (issue 13 measured 4.53 while another job took the CPU): the comparison is
flagged, as it is when the sampler saw a disturbed window in either run.
"""

from __future__ import annotations

import math

from harness.stats import Interval, Summary
from harness.utilization import UtilizationSummary


def _relative_half_width(estimate: float, ci: Interval | None) -> float | None:
    if ci is None or ci.high is None or estimate <= 0:
        return None
    return (ci.high - ci.low) / (2 * estimate)


def _reason(ddp: Summary, single: Summary) -> str | None:
    """Why the efficiency's interval cannot be bounded (a side's throughput interval is unbounded), with the fix."""
    for name, s in (("the DDP run", ddp), ("the single-process run", single)):
        if _relative_half_width(s.throughput, s.throughput_ci95) is None:
            why = s.throughput_ci95_reason or "too few repeats to bound its throughput's interval"
            return f"too few repeats to bound: {name}: {why}"
    return None


def _disturbed(
    eff: float,
    low: float | None,
    ddp_util: UtilizationSummary | None,
    single_util: UtilizationSummary | None,
    nodes: int = 1,
) -> str | None:
    """Why the comparison is disturbed, or None: an efficiency above 1 beyond its interval (or with
    none), or a disturbed measurement window in either run."""
    if eff > 1.0 and (low is None or low > 1.0):
        beyond = "beyond its 95% interval" if low is not None else "with no interval to tell it from noise"
        same = "on the same CPUs at the same global batch" if nodes == 1 else f"per node of {nodes}"
        return (
            f"efficiency {eff:.2f} is above 1 {beyond}, {same}: one of the two runs was slowed by something "
            "else (another job, steal, a cold cache). Fix: re-run on a quiet machine"
        )
    for name, util in (("DDP", ddp_util), ("single-process", single_util)):
        if util is not None and util.disturbed:
            return f"the {name} run's measurement was disturbed: {util.interference}"
    return None


def scaling(
    ddp: Summary,
    single: Summary,
    ddp_util: UtilizationSummary | None = None,
    single_util: UtilizationSummary | None = None,
    nodes: int = 1,
) -> dict[str, float | str | bool | None]:
    """Efficiency, its 95% interval (module docstring) or why there is none, and whether the
    comparison is disturbed, JSON-ready (the fields of :class:`suite.results.model.Scaling`).

    With ``nodes`` > 1, ``ddp`` ran on that many nodes and ``single`` on one at the same
    per-rank batch (weak scaling): efficiency = ddp / (nodes x single), 1 being perfect.

    Raises:
        ValueError: a throughput is not positive.
    """
    if ddp.throughput <= 0 or single.throughput <= 0:
        raise ValueError("throughputs must be positive to compare them")
    eff = ddp.throughput / (nodes * single.throughput)
    ra = _relative_half_width(ddp.throughput, ddp.throughput_ci95)
    rb = _relative_half_width(single.throughput, single.throughput_ci95)
    low = high = None
    if ra is not None and rb is not None:
        r = math.hypot(ra, rb)
        low, high = eff * math.exp(-r), eff * math.exp(r)
    disturbed = _disturbed(eff, low, ddp_util, single_util, nodes)
    method = (
        "DDP / single-process throughput"
        if nodes == 1
        else f"{nodes}-node throughput / ({nodes} x one-node throughput), same per-rank batch (weak scaling)"
    )
    return {
        "ddp_throughput": ddp.throughput,
        "single_throughput": single.throughput,
        "single_ci95_low": single.throughput_ci95.low if single.throughput_ci95 else None,
        "single_ci95_high": single.throughput_ci95.high if single.throughput_ci95 else None,
        "efficiency": eff,
        "efficiency_ci95_low": low,
        "efficiency_ci95_high": high,
        "method": f"{method}; 95% interval by the delta method on the log scale",
        "efficiency_ci95_reason": _reason(ddp, single) if low is None else None,
        "disturbed": disturbed is not None,
        "disturbed_reason": disturbed,
    }
