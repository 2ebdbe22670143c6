"""The honest comparison of a data-parallel run: one process on the same cores, same global batch.

Scaling efficiency = DDP throughput / single-process throughput (1.0 = no gain, as
the seed study found for DDP over two NUMA nodes; > 1 = DDP pays). Its interval
propagates both 95% intervals to first order on the log scale (delta method),
treating the two measurements as independent:
``eff x exp(+-sqrt(r_ddp^2 + r_single^2))`` with ``r = half-width / estimate``.
"""

from __future__ import annotations

import math

from harness.stats import Interval, Summary
from harness.system import parse_cpulist
from suite.config import InlineLaunch, LaunchBase, RunConfig

DDP_ONLY_PARAMS = ("backend", "collective_timeout_s")


def single_process_config(config: RunConfig, placement: list[dict[str, str]]) -> RunConfig:
    """The comparison run: resnet50-cpu, one process bound to all the ranks' CPUs, global batch, one thread per CPU."""
    cpus = ",".join(slot["cpus"] for slot in placement)
    n_cpus = len(parse_cpulist(cpus))
    params = {k: v for k, v in config.params.items() if k not in DDP_ONLY_PARAMS}
    params.update(batch_size=config.params["batch_size"] * len(placement), intra_op_threads=n_cpus)
    common = {k: v for k, v in config.launch.model_dump().items() if k in LaunchBase.model_fields}
    launch = InlineLaunch.model_validate({**common, "launcher": "inline", "cpus": cpus})
    return config.model_copy(
        update={
            "workload": "resnet50-cpu",
            "params": params,
            "launch": launch,
            "overrides": [*config.overrides, "(single-process comparison)"],
        }
    )


def _relative_half_width(estimate: float, ci: Interval | None) -> float | None:
    if ci is None or ci.high is None or estimate <= 0:
        return None
    return (ci.high - ci.low) / (2 * estimate)


def scaling(ddp: Summary, single: Summary) -> dict[str, float | str | None]:
    """Efficiency and its 95% interval (module docstring), JSON-ready.

    Raises:
        ValueError: a throughput is not positive.
    """
    if ddp.throughput <= 0 or single.throughput <= 0:
        raise ValueError("throughputs must be positive to compare them")
    eff = ddp.throughput / single.throughput
    ra = _relative_half_width(ddp.throughput, ddp.throughput_ci95)
    rb = _relative_half_width(single.throughput, single.throughput_ci95)
    low = high = None
    if ra is not None and rb is not None:
        r = math.hypot(ra, rb)
        low, high = eff * math.exp(-r), eff * math.exp(r)
    return {
        "ddp_throughput": ddp.throughput,
        "single_throughput": single.throughput,
        "single_ci95_low": single.throughput_ci95.low if single.throughput_ci95 else None,
        "single_ci95_high": single.throughput_ci95.high if single.throughput_ci95 else None,
        "efficiency": eff,
        "efficiency_ci95_low": low,
        "efficiency_ci95_high": high,
        "method": "DDP / single-process throughput; 95% interval by the delta method on the log scale",
    }
